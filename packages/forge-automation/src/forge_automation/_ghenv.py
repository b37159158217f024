"""What every `gh` child gets: a few environment defaults under the caller's, and REST argv.

A module of its own, importing only `os`, so that forge-cli can start gh children with exactly the
wire's environment and argv before the rest of the library is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = [
    "API_VERSION",
    "GH_CHILD_DEFAULTS",
    "JSON_ACCEPT",
    "gh_child_env",
    "protection_path",
    "rest_args",
]

# Pinned here, not left to gh: gh sends this header by default only from 2.88 on.
API_VERSION = "2022-11-28"
JSON_ACCEPT = "application/vnd.github+json"

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


def protection_path(repo: str, branch: str) -> str:
    """Return the REST path of a branch's classic protection, each piece quoted as the wire's.

    Here rather than in the wire so that pr-status can start this read before the wire loads.
    """
    from urllib.parse import quote

    return f"repos/{quote(repo, safe='/')}/branches/{quote(branch, safe='/')}/protection"


def rest_args(
    method: str,
    path: str,
    *,
    accept: str = JSON_ACCEPT,
    headers: Mapping[str, str] | None = None,
) -> list[str]:
    """Return the argv of one REST call (`gh api -i`), the API version pinned."""
    args = ["api", "-i", "--method", method, path, "-H", f"Accept: {accept}"]
    args += ["-H", f"X-GitHub-Api-Version: {API_VERSION}"]
    for name, value in (headers or {}).items():
        args += ["-H", f"{name}: {value}"]
    return args
