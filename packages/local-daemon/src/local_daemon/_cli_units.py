"""The systemd user units this package ships, and `local-daemon units install` that writes them.

The units are package data (`local_daemon/units/`), byte-identical copies of the repository's
`systemd/` (a test holds them equal). `units install` writes each to the user's unit dir
(`$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`) atomically, mode 0644, one line
per unit (`wrote`, `unchanged`, `replaced`; with `--dry-run`, `would write` and so on), then the
lines that set the app and enable the socket: it enables nothing itself. A unit file there that
differs from the shipped one, is not a regular file or cannot be read is never overwritten
silently: the command names it, writes nothing and exits 78; `--force` replaces it (local
changes belong in a drop-in).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeAlias

from ._cli_exits import EX_CONFIG, PROG, CliExit, echo_err, fail
from ._statefile import UnsafeFileError, read_safe_file, write_atomic

__all__ = ["UNIT_NAMES", "UnitAction", "UnitPlan", "install", "plan_units", "user_unit_dir"]

UNIT_NAMES: Final = ("local-daemon.socket", "local-daemon.service")
UnitAction: TypeAlias = Literal["write", "unchanged", "replace", "conflict"]
_MAX_UNIT_BYTES: Final = 1 << 20
_DIFFERS: Final = "differs from the unit this version ships"
_DONE: Final = {"write": "wrote", "replace": "replaced", "unchanged": "unchanged"}
_DRY: Final = {"write": "would write", "replace": "would replace", "unchanged": "unchanged"}
_ENABLE: Final = (
    "mkdir -p ~/.config/local-daemon",
    "printf 'LOCAL_DAEMON_APP=MODULE:ATTR\\n' > ~/.config/local-daemon/env   # your registry",
    "systemctl --user daemon-reload",
    "systemctl --user enable --now local-daemon.socket",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitPlan:
    """What installing one unit does: `action` at `path`, and for a conflict, why."""

    name: str
    path: Path
    action: UnitAction
    problem: str = ""
    data: bytes = field(repr=False)


def user_unit_dir(environ: Mapping[str, str]) -> Path:
    """Return the user's systemd unit dir: `$XDG_CONFIG_HOME/systemd/user` or ~/.config's."""
    config = environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(config):  # unset, empty or relative: the XDG spec says ignore it
        config = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(config) / "systemd" / "user"


def _existing(path: Path, data: bytes) -> tuple[UnitAction, str]:
    held = read_safe_file(path, max_bytes=_MAX_UNIT_BYTES, owner=False, forbidden_mode=0)
    if isinstance(held, UnsafeFileError):
        if held.problem == "missing":
            return "write", ""
        if held.problem == "unreadable":
            return "conflict", f"cannot be read ({held.strerror})"
        if held.problem == "too_large":
            return "conflict", _DIFFERS
        return "conflict", "is not a regular file"
    if held.data == data:
        return "unchanged", ""
    return "conflict", _DIFFERS


def plan_units(directory: Path, *, force: bool = False) -> list[UnitPlan]:
    """Say what installing the shipped units into `directory` would do, writing nothing."""
    from importlib.resources import files

    shipped = files("local_daemon") / "units"
    plans = []
    for name in UNIT_NAMES:
        data = (shipped / name).read_bytes()
        path = directory / name
        action, problem = _existing(path, data)
        if action == "conflict" and force:
            action, problem = "replace", ""
        plans.append(UnitPlan(name=name, path=path, action=action, problem=problem, data=data))
    return plans


def install(*, dry_run: bool, force: bool) -> None:
    """Run `units install`: write the units (unless `dry_run`) and say how to enable them."""
    directory = user_unit_dir(os.environ)
    plans = plan_units(directory, force=force)
    conflicts = [plan for plan in plans if plan.action == "conflict"]
    for plan in conflicts:
        echo_err(
            f"{PROG}: {plan.path} {plan.problem}; nothing written (--force replaces it; keep "
            f"local changes in a drop-in: systemctl --user edit {plan.name})"
        )
    if conflicts:
        raise CliExit(EX_CONFIG)
    if not dry_run:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for plan in plans:
                if plan.action in ("write", "replace"):
                    write_atomic(plan.path, plan.data, mode=0o644)
        except OSError as exc:
            raise fail(
                EX_CONFIG, f"cannot write the units to {directory}: {exc.strerror}"
            ) from None
    said = _DRY if dry_run else _DONE
    for plan in plans:
        sys.stdout.write(f"{said[plan.action]} {plan.path}\n")
    sys.stdout.write("Then set the app and enable the socket:\n")
    for line in _ENABLE:
        sys.stdout.write(f"  {line}\n")
    command = Path(os.environ.get("HOME") or os.path.expanduser("~")) / ".local" / "bin" / PROG
    if not os.access(command, os.X_OK):
        echo_err(
            f"{PROG}: note: the service runs {command}, which is not there; install it with "
            f"`uv tool install local-daemon --with <your-product>`"
        )
