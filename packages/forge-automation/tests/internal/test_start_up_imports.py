"""Invariant: a command imports only the modules it uses (start-up speed is a feature).

White-box: these name the private modules that must stay unloaded, and the lazy front door's
table of which module defines each public name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fakeforge import ForgeServer
from forge_builders import GreenPr

REPO = "acme/widgets"


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


@pytest.mark.gh
def test_pr_status_starts_its_protection_read_before_the_library_loads(
    green_pr: GreenPr, server: ForgeServer
) -> None:
    # The snapshot read starts before dataclasses are imported and, once it answers, the base's
    # classic-protection read before the verdict's modules: both gh children run beside the
    # imports instead of after them (the bench's pr-status figure).
    green_pr(strict=True)
    probe = (
        "import json, sys\n"
        "import forge_automation._gh as gh\n"
        "seen, start = [], gh.start_gh\n"
        "def spy(args, **kw):\n"
        "    path = 'graphql' if 'graphql' in args else args[args.index('--method') + 2]\n"
        "    loaded = [m for m in ('dataclasses', 'forge_automation._readiness') if m in sys.modules]\n"
        "    seen.append([path, loaded])\n"
        "    return start(args, **kw)\n"
        "gh.start_gh = spy\n"
        "from forge_automation import cli\n"
        "try:\n"
        f"    cli.main(['pr-status', '{REPO}#1'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(seen), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        check=True,
        timeout=60,
    )
    assert done.stdout.endswith(" ready blockers=none\n")
    assert json.loads(done.stderr) == [
        ["graphql", []],
        [f"repos/{REPO}/branches/main/protection", ["dataclasses"]],
    ]
    assert [r.url.rsplit("/", 1)[-1] for r in server.requests()][-2:] == ["graphql", "protection"]
