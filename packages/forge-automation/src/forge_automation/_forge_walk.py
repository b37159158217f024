"""approved_head_walk over the forge's own commit records, for a caller without a clone.

The train approves the head a PR has when its turn starts. A later head is still the PR's own
when it is that head with nothing but merges of the base on top: what GitHub's update-branch
writes (ours, answered 202 and landed later, or one a person asked for in the web UI). The walk
reads each commit's parents from the forge (`git/commits/{sha}`) and asks the forge whether a
merged-in parent is on the base (`compare/{base}...{parent}` is `behind` or `identical`). What
it proves is the topology only: the merges' trees are GitHub's own work, and premerge judges the
new head's CI and reviews again before anything merges.

A read that fails raises (the caller stops, it does not guess); a commit the forge does not know
ends the walk unreachable.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ._port import ForgePort
from ._walk import HeadWalk, approved_head_walk

__all__ = ["FORGE_WALK_LIMIT", "forge_head_walk"]

# Commits the walk reads at most: each update-branch adds one merge, so a handful is plenty;
# a head further from the approved one is not the train's doing.
FORGE_WALK_LIMIT = 20


class _ForgeParents(Mapping[str, Sequence[str]]):
    """The parents of each commit the walk asks about, read from the forge on first use."""

    def __init__(self, port: ForgePort, repo: str, limit: int) -> None:
        self._port, self._repo, self._limit = port, repo, limit
        self._known: dict[str, tuple[str, ...]] = {}

    def __getitem__(self, sha: str) -> Sequence[str]:
        if sha not in self._known:
            if len(self._known) >= self._limit:
                raise KeyError(sha)
            parents = self._port.commit_parents(self._repo, sha)
            if parents is None:
                raise KeyError(sha)
            self._known[sha] = parents
        return self._known[sha]

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        # The walk's own bound (len + 1 steps): the limit, not what was read so far.
        return self._limit


def forge_head_walk(
    port: ForgePort,
    repo: str,
    *,
    base: str,
    head: str,
    approved_head: str,
    limit: int = FORGE_WALK_LIMIT,
) -> HeadWalk:
    """Walk from `head` to `approved_head` through merges of `base`, reading the forge."""
    on_base: dict[str, bool] = {}

    def is_on_base(sha: str) -> bool:
        if sha not in on_base:
            on_base[sha] = port.compare_ancestry(repo, base, sha) in ("behind", "identical")
        return on_base[sha]

    return approved_head_walk(
        head=head,
        approved_head=approved_head,
        parents=_ForgeParents(port, repo, limit),
        on_base=is_on_base,
    )
