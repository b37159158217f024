"""mkdocs hook: the generated pages of the docs site, each package's CLI and API reference.

A package's CLI reference is the help of the argparse parser its command runs, for the tool and
every command and subcommand under it; its API reference is one mkdocstrings block per name in
each public module's `__all__`, read from the imported module, so the page lists exactly what
users can import (tests-integration/test_docs.py checks the built site against `__all__`).
"""

from __future__ import annotations

import argparse
import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

__all__ = ["PACKAGES", "Package", "api_page", "cli_page", "on_files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Package:
    """One workspace package: its public modules and the parser (or usage text) of each CLI."""

    name: str
    modules: tuple[str, ...]
    clis: tuple[tuple[str, Callable[[], argparse.ArgumentParser | str]], ...]


def _account_cli() -> argparse.ArgumentParser:
    from agent_accounts.cli._parse import _build

    return _build()[0]


def _local_daemon() -> argparse.ArgumentParser:
    from local_daemon.cli import build_parser

    return build_parser()


def _forge_cli() -> argparse.ArgumentParser:
    from forge_automation.cli._parse import _build

    return _build()[0]


def _squash_message() -> str:
    from forge_automation.squash_cli import USAGE

    return USAGE


PACKAGES = (
    Package(
        name="agent-accounts",
        modules=("agent_accounts", "agent_accounts.io"),
        clis=(("account-cli", _account_cli),),
    ),
    Package(
        name="local-daemon", modules=("local_daemon",), clis=(("local-daemon", _local_daemon),)
    ),
    Package(
        name="forge-automation",
        modules=("forge_automation",),
        clis=(("forge-cli", _forge_cli), ("squash-message", _squash_message)),
    ),
)


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Yield the parser and every command parser under it, depth first, in declaration order."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, child in action.choices.items():
                if id(child) not in seen:  # an alias names the same parser again
                    seen.add(id(child))
                    yield from _commands(child, (*words, name))


def cli_page(package: Package) -> str:
    """Return the Markdown of a package's CLI reference: each command's `--help`."""
    lines = [
        f"# {package.name} CLI reference",
        "",
        "Generated from the argparse parser each command runs: what `--help` prints.",
        "",
    ]
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # one width for every page, whatever the terminal
    try:
        for tool, build in package.clis:
            built = build()
            if isinstance(built, str):
                lines += [f"## {tool}", "", "```text", built.rstrip("\n"), "```", ""]
                continue
            for words, parser in _commands(built, (tool,)):
                title = " ".join(words)
                lines += [
                    f"## {title}",
                    "",
                    "```text",
                    parser.format_help().rstrip("\n"),
                    "```",
                    "",
                ]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(lines)


def api_page(package: Package) -> str:
    """Return the Markdown of a package's API reference: every name of each module's `__all__`."""
    blocks = [
        f"# {package.name} API reference",
        "Every public name: each module's `__all__`, from the docstrings. The names and the "
        "module paths listed here are the versioning contract.",
    ]
    for module_name in package.modules:
        module = importlib.import_module(module_name)
        blocks.append(f"## `{module_name}`")
        blocks += [f"::: {module_name}.{name}" for name in sorted(module.__all__)]
    return "\n\n".join(blocks) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add each package's generated `cli.md` and `api.md` to the site."""
    for package in PACKAGES:
        for page, content in (("cli.md", cli_page(package)), ("api.md", api_page(package))):
            files.append(File.generated(config, f"{package.name}/{page}", content=content))
    return files
