"""Invariants of the merge decision's own module: blocker order, and a decision without I/O.

White-box: `_readiness.BLOCKER_REASONS` fixes the order blockers are reported in (the old reasons
first, the review ones after), and the decision module imports nothing that reads or writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import forge_automation._readiness as readiness
from forge_automation._readiness import BLOCKER_REASONS

REVIEW_REASONS = {
    "reviews-stale",
    "changes-requested",
    "approvals-missing",
    "code-owner-review-missing",
    "review-required",
    "last-push-unapproved",
    "review-requested",
    "threads-unresolved",
}


def test_review_reasons_are_listed_after_the_old_ones_in_order() -> None:
    assert BLOCKER_REASONS[: BLOCKER_REASONS.index("unapproved-head") + 1] == (
        "pr-closed",
        "pr-merged",
        "pr-draft",
        "merge-conflict",
        "behind-base",
        "no-required-checks",
        "check-failed",
        "check-pending",
        "unapproved-head",
    )
    assert set(BLOCKER_REASONS[9:]) == REVIEW_REASONS


def test_the_decision_imports_nothing_that_does_io() -> None:
    tree = ast.parse(Path(readiness.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert imported <= {
        "__future__",
        "collections.abc",
        "dataclasses",
        "typing",
        "._records",
        "._types",
        "._verdict",
    }
