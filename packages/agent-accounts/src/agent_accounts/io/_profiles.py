"""Profile discovery: which config dirs are accounts."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from agent_accounts import account_label

__all__ = [
    "CONFIG_DIRS_ENV",
    "DEFAULT_DIR_NAME",
    "PROFILES_DIR_NAME",
    "PROFILE_ROOT_ENV",
    "Profile",
    "default_config_dir",
    "discover_profiles",
]

PROFILE_ROOT_ENV: Final = "AGENT_PROFILE_ROOT"
CONFIG_DIRS_ENV: Final = "AGENT_CONFIG_DIRS"
DEFAULT_DIR_NAME: Final = ".agent"
PROFILES_DIR_NAME: Final = ".agent-profiles"


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """One account: its label and its config dir."""

    label: str
    config_dir: str


def _home(home: str | os.PathLike[str] | None) -> str:
    # expanduser is what Path.home() calls; pathlib itself is not worth importing here.
    return os.fspath(home) if home is not None else os.path.expanduser("~")


def default_config_dir(*, home: str | os.PathLike[str] | None = None) -> str:
    """Return `<home>/.agent`, the default account's config dir."""
    return os.path.join(_home(home), DEFAULT_DIR_NAME)


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)  # lstat: a symlink is never a profile
    except OSError:
        return False


def discover_profiles(
    *, home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> list[Profile]:
    """List the profiles: `<home>/.agent`, then each dir under the profile root in name order."""
    environ = os.environ if env is None else env
    home_dir = _home(home)
    listed = environ.get(CONFIG_DIRS_ENV, "")
    if listed:
        dirs = [d for d in listed.split(os.pathsep) if d]
        return [Profile(label=account_label(d, home=home_dir), config_dir=d) for d in dirs]
    profiles: list[Profile] = []
    default = default_config_dir(home=home_dir)
    if _is_real_dir(default):
        profiles.append(Profile(label=account_label(default, home=home_dir), config_dir=default))
    root = environ.get(PROFILE_ROOT_ENV, "") or os.path.join(home_dir, PROFILES_DIR_NAME)
    if not _is_real_dir(root):
        return profiles
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return profiles
    for name in names:
        path = os.path.join(root, name)
        if _is_real_dir(path):
            profiles.append(Profile(label=account_label(path, home=home_dir), config_dir=path))
    return profiles
