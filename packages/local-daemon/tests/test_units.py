"""`local-daemon units install [--dry-run] [--force]`: the shipped units into the user's unit dir.

The tests are agent-accounts' too (tests-integration/units_cli_cases.py); this names local-daemon's
units and answers. (systemd-analyze verifies what this command writes:
tests-integration/test_units_install.py.)
"""

from __future__ import annotations

from local_daemon.cli import main
from units_cli_cases import UnitsCli, UnitsInstallTests


class TestLocalDaemonUnits(UnitsInstallTests):
    cli = UnitsCli(
        prog="local-daemon",
        package="local_daemon",
        main=main,
        names=("local-daemon.socket", "local-daemon.service"),
        enable="local-daemon.socket",
        install_hint="uv tool install local-daemon --with <your-product>",
        install_notes=("LOCAL_DAEMON_APP=MODULE:ATTR",),
        changed="local-daemon.socket",
        changed_text=b"[Socket]\nListenStream=127.0.0.1:9000\n",
        linked="local-daemon.service",
        refused_exit=78,
        action="ACTION",
    )
