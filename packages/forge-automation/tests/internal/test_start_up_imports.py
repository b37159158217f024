"""Invariant: a command imports only the modules it uses (start-up speed is a feature).

White-box: these name the private modules that must stay unloaded, and the lazy front door's
table of which module defines each public name.
"""

from __future__ import annotations

import subprocess
import sys

import forge_automation


def test_the_cli_imports_only_what_it_uses() -> None:
    probe = (
        "import sys, forge_automation.squash_cli; print(' '.join(sorted(m for m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(done.stdout.split())
    assert "forge_automation._squash" in loaded
    heavy = {
        "forge_automation._wire",
        "forge_automation._fake",
        "forge_automation._backstop",
        "forge_automation._port",
        "forge_automation._app_token",
        "cryptography",
        "typer",
        "click",
        "httpx",
        "aiohttp",
        "subprocess",
    }
    assert loaded & heavy == set()


def test_the_lazy_front_door_serves_every_exported_name() -> None:
    from forge_automation import _MODULE_OF

    assert set(_MODULE_OF) == set(forge_automation.__all__)
    assert forge_automation.format_squash_message.__module__ == "forge_automation._squash"


def test_importing_the_cli_leaves_the_library_for_later() -> None:
    # pr-status starts its read right after this import; what the import pulls in runs before
    # it, so the wire, dataclasses, json and typer must not be among it.
    code = "import sys, forge_automation.cli; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert "forge_automation.cli" in loaded
    assert loaded.isdisjoint(
        {
            "forge_automation._wire",
            "forge_automation._port",
            "forge_automation._types",
            "dataclasses",
            "json",
            "typing",
            "typer",
            "click",
            "subprocess",
            "argparse",
        }
    )
