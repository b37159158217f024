"""The docs site builds with `mkdocs build --strict` and its reference pages are complete.

One build per session (the same command `make docs` runs, into a temporary dir) feeds every test:
the API reference has an entry for every name of each public module's `__all__`, and the CLI
reference a section for every command the parsers know.
"""

from __future__ import annotations

import argparse
import html
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import hooks  # noqa: E402  (docs/hooks.py: the mkdocs hook that generates the reference pages)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the site once, strictly: any warning (a broken link, a bad docstring) fails it."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _ids(page: Path) -> set[str]:
    return {html.unescape(found) for found in re.findall(r'\bid="([^"]+)"', page.read_text())}


@pytest.mark.parametrize("package", hooks.PACKAGES, ids=lambda p: p.name)
def test_api_reference_lists_every_name_of_each_all(site: Path, package: hooks.Package) -> None:
    ids = _ids(site / package.name / "api" / "index.html")
    for module_name in package.modules:
        module = importlib.import_module(module_name)
        assert module.__all__, module_name
        missing = sorted(name for name in module.__all__ if f"{module_name}.{name}" not in ids)
        assert not missing, f"{module_name}: {missing}"


def _command_titles(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> list[str]:
    titles = [" ".join(words)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                titles += _command_titles(child, (*words, name))
    return titles


@pytest.mark.parametrize("package", hooks.PACKAGES, ids=lambda p: p.name)
def test_cli_reference_has_every_command_help(site: Path, package: hooks.Package) -> None:
    text = html.unescape(
        re.sub(r"<[^>]+>", "", (site / package.name / "cli" / "index.html").read_text())
    )
    for tool, build in package.clis:
        built = build()
        if isinstance(built, str):
            assert built.strip().splitlines()[0] in text
            continue
        for title in _command_titles(built, (tool,)):
            assert f"usage: {title}" in text, title
