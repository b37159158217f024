"""`account-cli units install [--dry-run] [--force]`: the shipped systemd units, into place.

Writes the three units to `$XDG_CONFIG_HOME/systemd/user` (else `~/.config/systemd/user`), one
line per unit (`wrote`, `unchanged`, `replaced`; with `--dry-run`, `would write` and so on), then
the `systemctl --user` lines that enable the timer: it enables nothing itself. A unit file there
that differs from the shipped one is never overwritten silently: the command names it, writes
nothing and exits 1; `--force` replaces it (local changes belong in a drop-in).
"""

from __future__ import annotations

import os
import sys

from ._exits import EXIT_FAILED, EXIT_OK, PROG, err
from ._output import shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

__all__ = ["run"]

_DONE = {"write": "wrote", "replace": "replaced", "unchanged": "unchanged"}
_DRY = {"write": "would write", "replace": "would replace", "unchanged": "unchanged"}
_ENABLE = (
    "systemctl --user daemon-reload",
    "systemctl --user enable --now account-poll.timer",
)


def run(options: Namespace) -> int:
    """Run `units install` as parsed."""
    from agent_accounts.io._units import install_units, plan_units, user_unit_dir

    directory = user_unit_dir(os.environ)
    plans = plan_units(directory, force=options.force)
    conflicts = [plan for plan in plans if plan.action == "conflict"]
    for plan in conflicts:
        err(
            f"{shown(plan.path)} {plan.problem}; nothing written (--force replaces it; keep "
            f"local changes in a drop-in: systemctl --user edit {plan.name})"
        )
    if conflicts:
        return EXIT_FAILED
    if not options.dry_run:
        try:
            install_units(directory, plans)
        except OSError as exc:
            err(f"cannot write the units to {shown(directory)}: {exc.strerror}")
            return EXIT_FAILED
    said = _DRY if options.dry_run else _DONE
    for plan in plans:
        sys.stdout.write(f"{said[plan.action]} {shown(plan.path)}\n")
    sys.stdout.write("Enable the timer with:\n")
    for line in _ENABLE:
        sys.stdout.write(f"  {line}\n")
    _note_missing_command()
    return EXIT_OK


def _note_missing_command() -> None:
    """Warn when the unit's command, ~/.local/bin/account-cli, is not there to run."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    command = os.path.join(home, ".local", "bin", PROG)
    if not os.access(command, os.X_OK):
        err(
            f"note: the service runs {shown(command)}, which is not there; install it with "
            f"`uv tool install agent-accounts` (or `pipx install agent-accounts`)"
        )
