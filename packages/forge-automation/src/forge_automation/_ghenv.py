"""The environment every `gh` child gets: a few defaults under the caller's environment.

A module of its own, importing only `os`, so that forge-cli can start gh children with exactly the
wire's environment before the rest of the library is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["GH_CHILD_DEFAULTS", "gh_child_env"]

# Under the caller's environment, which wins. TCELL_MINIMIZE: gh links tcell, whose init builds a
# rune-width table over all of Unicode unless this is set; that is over half the CPU time of a
# `gh api` call (52 ms -> 22 ms measured), spent on a table `gh api` never reads.
GH_CHILD_DEFAULTS: Mapping[str, str] = {
    "GH_PROMPT_DISABLED": "1",
    "GH_NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
    "TCELL_MINIMIZE": "1",
}


def gh_child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment `run_gh` gives a child: defaults, os.environ, then `extra`."""
    return {**GH_CHILD_DEFAULTS, **os.environ, **(extra or {})}
