"""The units each wheel ships are the repository's `systemd/` ones, and what `units install` writes
passes the real `systemd-analyze verify`.

`systemd/` at the top is the source; `agent_accounts/units/` and `local_daemon/units/` are copies
so that a wheel carries them (copy again after editing: `cp systemd/account-poll* packages/
agent-accounts/src/agent_accounts/units/; cp systemd/local-daemon.* packages/local-daemon/src/
local_daemon/units/`). The wheel's contents: tests-integration/test_packaging.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {
    "agent_accounts": ROOT / "packages" / "agent-accounts" / "src" / "agent_accounts" / "units",
    "local_daemon": ROOT / "packages" / "local-daemon" / "src" / "local_daemon" / "units",
}
UNIT_SUFFIXES = frozenset({".service", ".socket", ".timer"})
COMMAND = {"agent_accounts": "account-cli", "local_daemon": "local-daemon"}


def test_the_shipped_units_are_the_systemd_dir_byte_for_byte() -> None:
    sources = {
        p.name: p.read_bytes() for p in (ROOT / "systemd").iterdir() if p.suffix in UNIT_SUFFIXES
    }
    shipped = {
        p.name: p.read_bytes() for units in SHIPPED.values() for p in sorted(units.iterdir())
    }
    assert sorted(shipped) == sorted(sources)  # every unit ships, in exactly one package
    for name, data in shipped.items():
        assert data == sources[name], f"{name}: copy systemd/{name} again (see this module)"


@pytest.mark.parametrize("module", sorted(SHIPPED))
def test_systemd_analyze_verify_passes_on_what_units_install_writes(
    tmp_path: Path, module: str
) -> None:
    home = tmp_path / "home"
    # The units run ~/.local/bin/<command>, where `uv tool install` puts it.
    command = home / ".local" / "bin" / COMMAND[module]
    command.parent.mkdir(parents=True)
    command.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    command.chmod(0o755)
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
    env |= {"HOME": str(home), "XDG_RUNTIME_DIR": str(run)}
    installed = subprocess.run(
        [sys.executable, "-m", module, "units", "install"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    assert installed.stderr == ""
    unit_dir = home / ".config" / "systemd" / "user"
    written = sorted(unit_dir.iterdir())
    assert [p.name for p in written] == sorted(p.name for p in SHIPPED[module].iterdir())
    verified = subprocess.run(
        ["systemd-analyze", "verify", "--user", *map(str, written)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr.strip() == ""
