"""Profile discovery by path alone: which config dirs are accounts, and their labels.

`discover_profiles` wraps `profile_dirs` in `Profile` records; the status line calls it directly,
so this module imports neither `typing` nor `dataclasses`.
"""

from __future__ import annotations

import os
import stat

from agent_accounts._labels import account_label

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

__all__ = [
    "CONFIG_DIRS_ENV",
    "DEFAULT_DIR_NAME",
    "PROFILES_DIR_NAME",
    "PROFILE_ROOT_ENV",
    "config_dir_errno",
    "default_config_dir",
    "profile_dirs",
    "searched_dirs",
]

PROFILE_ROOT_ENV: Final = "AGENT_PROFILE_ROOT"
CONFIG_DIRS_ENV: Final = "AGENT_CONFIG_DIRS"
DEFAULT_DIR_NAME: Final = ".agent"
PROFILES_DIR_NAME: Final = ".agent-profiles"


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


def config_dir_errno(config_dir: str) -> int | None:
    """Return the errno that keeps the files in `config_dir` from being read, or None if none does.

    `ENOENT` for a dir that does not exist, `ENOTDIR` for a file, `EACCES` for one its user may not
    list or enter: what a user is told instead of "login missing" or "No journal yet".
    """
    try:
        fd = os.open(config_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return exc.errno
    try:
        os.stat(".", dir_fd=fd)  # entering it (search permission), as reading its files does
    except OSError as exc:
        return exc.errno
    finally:
        os.close(fd)
    return None


def profile_dirs(
    *, home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """List `(label, config_dir)` in `discover_profiles` order, by its rules."""
    environ = os.environ if env is None else env
    home_dir = _home(home)
    listed = environ.get(CONFIG_DIRS_ENV, "")
    if listed:
        dirs = [d for d in listed.split(os.pathsep) if d]
        return [(account_label(d, home=home_dir), d) for d in dirs]
    found: list[tuple[str, str]] = []
    default = default_config_dir(home=home_dir)
    if _is_real_dir(default):
        found.append((account_label(default, home=home_dir), default))
    root = environ.get(PROFILE_ROOT_ENV, "") or os.path.join(home_dir, PROFILES_DIR_NAME)
    if not _is_real_dir(root):
        return found
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found
    for name in names:
        path = os.path.join(root, name)
        if _is_real_dir(path):
            found.append((account_label(path, home=home_dir), path))
    return found


def searched_dirs(
    *, home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """List where `profile_dirs` looks, in its order, for telling a user who has no profile."""
    environ = os.environ if env is None else env
    home_dir = _home(home)
    listed = environ.get(CONFIG_DIRS_ENV, "")
    if listed:
        return [f"{CONFIG_DIRS_ENV}={listed}"]
    root = environ.get(PROFILE_ROOT_ENV, "") or os.path.join(home_dir, PROFILES_DIR_NAME)
    return [default_config_dir(home=home_dir), os.path.join(root, "*")]
