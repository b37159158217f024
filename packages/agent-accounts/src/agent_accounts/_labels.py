"""Account labels: a name for each profile, derived from its config dir by string rules alone."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the status line imports this module, never typing
if TYPE_CHECKING:
    from typing import Final

__all__ = ["DEFAULT_CONFIG_DIR_NAME", "DEFAULT_LABEL", "account_label"]

DEFAULT_CONFIG_DIR_NAME: Final = ".agent"
DEFAULT_LABEL: Final = "default"


def account_label(
    config_dir: str | os.PathLike[str], *, home: str | os.PathLike[str] | None = None
) -> str:
    """Name the account of `config_dir`: `default` for the default dir, else its last segment.

    With `home`, only `<home>/.agent` is the default dir. Without it (the pure core reads no
    environment), any dir named `.agent` is taken as the default dir. Paths are compared as
    normalised strings: no `~` expansion, no symlink resolution, no file access. Only one leading
    dot is dropped, and a path with no name (`/`, `.`) is labelled `default`.
    """
    path = os.path.normpath(os.fspath(config_dir))
    segment = os.path.basename(path)
    if home is not None:
        if path == os.path.normpath(os.path.join(os.fspath(home), DEFAULT_CONFIG_DIR_NAME)):
            return DEFAULT_LABEL
    elif segment == DEFAULT_CONFIG_DIR_NAME:
        return DEFAULT_LABEL
    label = segment.removeprefix(".")
    return label or DEFAULT_LABEL
