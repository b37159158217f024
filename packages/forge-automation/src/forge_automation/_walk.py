"""approved_head_walk: is the PR head the approved head plus nothing but merges of the base?

Pure: the caller supplies each commit's parents (from `git rev-list --parents` in a clone, or the
forge's commit records) and a way to tell base-branch commits. The walk follows first parents from
the head back to the approved head; every commit on the way must be a two-parent merge whose
second parent is on the base. The result lists those merges, so a caller with a clone can prove
the trees too: `git merge-tree --write-tree <approved head> <proof_base>` must give the head's
tree, showing the merges brought in the base and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["BaseMerge", "HeadWalk", "WalkFailure", "approved_head_walk"]

WalkFailure: TypeAlias = Literal[
    "missing-commit",
    "not-a-merge",
    "not-a-base-merge",
    "reached-base",
    "unreachable",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseMerge:
    """One merge of the base into the branch: the merge, its branch parent and its base parent."""

    sha: str
    branch_parent: str
    base_parent: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HeadWalk:
    """The walk's verdict; on failure `failure` and `detail` name the commit that stopped it.

    `merges` lists the base merges walked, newest first; `commits` the first-parent chain from the
    head down to (and including) the approved head when reachable.
    """

    reachable: bool
    merges: tuple[BaseMerge, ...]
    commits: tuple[str, ...]
    failure: WalkFailure | None = None
    detail: str | None = None

    @property
    def proof_base(self) -> str | None:
        """Return the newest base commit merged in, which the tree proof merges into the head."""
        return self.merges[0].base_parent if self.merges else None


def approved_head_walk(
    *,
    head: str,
    approved_head: str,
    parents: Mapping[str, Sequence[str]],
    on_base: Container[str] | Callable[[str], bool],
) -> HeadWalk:
    """Walk first parents from `head` to `approved_head`, accepting only merges of the base."""
    is_base = on_base if callable(on_base) else on_base.__contains__
    chain: list[str] = []
    merges: list[BaseMerge] = []
    current = head
    # Each step visits a distinct commit of `parents`, so this bound is never the reason to stop
    # on a well-formed history; it only ends a cyclic (corrupt) one.
    for _ in range(len(parents) + 1):
        chain.append(current)
        if current == approved_head:
            return HeadWalk(reachable=True, merges=tuple(merges), commits=tuple(chain))
        if current != head and is_base(current):
            return _fail(
                "reached-base", f"reached base commit {current} before the approved head", merges
            )
        commit_parents = parents.get(current)
        if commit_parents is None:
            return _fail("missing-commit", f"no parent data for commit {current}", merges)
        if len(commit_parents) == 0:
            return _fail(
                "unreachable", f"reached root commit {current} without the approved head", merges
            )
        if len(commit_parents) != 2:
            return _fail(
                "not-a-merge",
                f"commit {current} after the approved head is not a merge of the base",
                merges,
            )
        branch_parent, base_parent = commit_parents
        if not is_base(base_parent):
            return _fail(
                "not-a-base-merge",
                f"merge {current} brings in {base_parent}, which is not on the base",
                merges,
            )
        merges.append(BaseMerge(sha=current, branch_parent=branch_parent, base_parent=base_parent))
        current = branch_parent
    return _fail("unreachable", "the first-parent chain loops", merges)


def _fail(failure: WalkFailure, detail: str, merges: Sequence[BaseMerge]) -> HeadWalk:
    return HeadWalk(
        reachable=False, merges=tuple(merges), commits=(), failure=failure, detail=detail
    )
