"""`make demo` where a newcomer first stumbles: a busy port, no gh login, no profiles.

The page's empty sections must say why; a busy port is one line with the way out.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from demo_product.product import build_registry
from forge_automation import forge_port, gh_cli_wire

HERE = Path(__file__).resolve().parent


def test_a_busy_port_is_one_line_with_the_way_out(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "demo_product", "--port", str(port)],
            env={**os.environ, "PYTHONPATH": str(HERE), "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f'demo: port {port} is in use; pick another: make demo ARGS="--port N"'
        " (--port 0 picks a free one)\n"
    )


async def test_without_a_gh_login_the_pr_section_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real gh, with an empty config dir and no token: what a fresh machine has.
    for name in ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GH_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GH_CONFIG_DIR", str(tmp_path / "gh"))
    registry = build_registry(port=forge_port(gh_cli_wire()), repo="octo/widgets", profiles=list)
    prs = await registry.invoke_command("open_prs", {}, None)
    assert prs == {
        "repo": "octo/widgets",
        "prs": [],
        "problem": "gh could not read the forge: is gh installed and logged in? (`gh auth status`)",
    }
    accounts = await registry.invoke_command("accounts", {}, None)
    assert accounts == {
        "profiles": [],
        "problem": "no agent profiles in ~/.agent or ~/.agent-profiles/",
    }
