"""What every `gh` child gets: a few environment defaults under the caller's.

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
#
# GOGC=off with GOMEMLIMIT: a `gh api` child lives for one call, and Go's collector spends a fifth
# of its CPU there (about 44 ms -> 35 ms of CPU measured, wall time halved on a busy 2-core
# machine); the limit turns the collector back on before a large body (a long job log) could
# take more than 256 MiB.
GH_CHILD_DEFAULTS: Mapping[str, str] = {
    "GH_PROMPT_DISABLED": "1",
    "GH_NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
    "TCELL_MINIMIZE": "1",
    "GOGC": "off",
    "GOMEMLIMIT": "256MiB",
}


def gh_child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment `run_gh` gives a child: defaults, os.environ, then `extra`."""
    return {**GH_CHILD_DEFAULTS, **os.environ, **(extra or {})}
