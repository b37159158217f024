"""The systemd user units this package ships, and their installation into the user's unit dir.

The units are package data (`agent_accounts/units/`), byte-identical copies of the repository's
`systemd/` (a test holds them equal). `install_units` writes each to the user's unit dir
(`$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`) atomically, mode 0644, and never
overwrites a changed file silently: a file already there with the shipped bytes is left as it is;
one that differs, is not a regular file or cannot be read is a conflict, and a plan with a
conflict writes nothing unless `force` replaces it. Nothing is enabled.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from ._atomic import atomic_write
from ._gate import GateRefused, read_gated

__all__ = [
    "UNIT_NAMES",
    "UnitAction",
    "UnitPlan",
    "install_units",
    "plan_units",
    "shipped_units",
    "user_unit_dir",
]

UNIT_NAMES: Final = ("account-poll.service", "account-poll.timer", "account-poll-failed@.service")
UnitAction: TypeAlias = Literal["write", "unchanged", "replace", "conflict"]
_MAX_UNIT_BYTES: Final = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitPlan:
    """What installing one unit does: `action` at `path`, and for a conflict, why."""

    name: str
    path: str
    action: UnitAction
    problem: str = ""
    data: bytes = field(repr=False)


def user_unit_dir(environ: Mapping[str, str]) -> str:
    """Return the user's systemd unit dir: `$XDG_CONFIG_HOME/systemd/user` or ~/.config's."""
    config = environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(config):  # unset, empty or relative: the XDG spec says ignore it
        config = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(config, "systemd", "user")


def shipped_units() -> dict[str, bytes]:
    """Return each unit file this package ships, by name."""
    from importlib.resources import files

    units = files("agent_accounts") / "units"
    return {name: (units / name).read_bytes() for name in UNIT_NAMES}


def _existing(path: str, data: bytes) -> tuple[UnitAction, str]:
    try:
        held = read_gated(path, uid=None, max_bytes=_MAX_UNIT_BYTES, strict=False)
    except GateRefused:
        return "conflict", "is not a regular file"
    except NotADirectoryError:  # the dir is a file: nothing is there (and the mkdir will say so)
        return "write", ""
    except OSError as exc:
        return "conflict", f"cannot be read ({exc.strerror})"
    if held is None:
        return "write", ""
    if bytes(held) == data:
        return "unchanged", ""
    return "conflict", "differs from the unit this version ships"


def plan_units(directory: str, *, force: bool = False) -> list[UnitPlan]:
    """Say what installing the shipped units into `directory` would do, writing nothing."""
    plans = []
    for name, data in shipped_units().items():
        path = os.path.join(directory, name)
        action, problem = _existing(path, data)
        if action == "conflict" and force:
            action, problem = "replace", ""
        plans.append(UnitPlan(name=name, path=path, action=action, problem=problem, data=data))
    return plans


def install_units(directory: str, plans: list[UnitPlan]) -> None:
    """Write the planned units (none when one is a conflict); raise `OSError` when one fails."""
    if any(plan.action == "conflict" for plan in plans):
        return
    os.makedirs(directory, exist_ok=True)
    for plan in plans:
        if plan.action in ("write", "replace"):
            atomic_write(directory, plan.name, plan.data, mode=0o644)
