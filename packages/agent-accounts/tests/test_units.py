"""`account-cli units install [--dry-run] [--force]`: the shipped units into the user's unit dir.

The tests are local-daemon's too (tests-integration/units_cli_cases.py); this names agent-accounts'
units and answers. (systemd-analyze verifies what this command writes:
tests-integration/test_units_install.py.)
"""

from __future__ import annotations

from agent_accounts.cli import main
from units_cli_cases import UnitsCli, UnitsInstallTests


class TestAccountUnits(UnitsInstallTests):
    cli = UnitsCli(
        prog="account-cli",
        package="agent_accounts",
        main=main,
        names=("account-poll.service", "account-poll.timer", "account-poll-failed@.service"),
        enable="account-poll.timer",
        install_hint="uv tool install agent-accounts",
        changed="account-poll.timer",
        changed_text=b"[Timer]\nOnUnitActiveSec=60s\n",
        linked="account-poll.service",
        refused_exit=1,
        action="install",
    )
