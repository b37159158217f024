"""Profile discovery: which config dirs are accounts."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ._discovery import (
    CONFIG_DIRS_ENV,
    DEFAULT_DIR_NAME,
    PROFILE_ROOT_ENV,
    PROFILES_DIR_NAME,
    default_config_dir,
    profile_dirs,
)

__all__ = [
    "CONFIG_DIRS_ENV",
    "DEFAULT_DIR_NAME",
    "PROFILES_DIR_NAME",
    "PROFILE_ROOT_ENV",
    "Profile",
    "default_config_dir",
    "discover_profiles",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """One account: its label and its config dir."""

    label: str
    config_dir: str


def discover_profiles(
    *, home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> list[Profile]:
    """List the profiles: `<home>/.agent`, then each dir under the profile root in name order."""
    return [
        Profile(label=label, config_dir=config_dir)
        for label, config_dir in profile_dirs(home=home, env=env)
    ]
