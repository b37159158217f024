"""premerge and pr-status judge the same forge state alike: one rule loader, one decision.

pr-status reads a PR in one GraphQL document (plus classic protection over REST), premerge over
REST and its own GraphQL reads; both load the branch's rules through `load_branch_rules` and
judge reviews with `merge_readiness`. Over a table of forge states, through the real gh, they
must agree: premerge OK exactly when pr-status says ready, with the same review blockers.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState
from forge_builders import ForgeCli

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
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


@dataclass
class World:
    run: ForgeCli
    server: ForgeServer
    repo: RepoState
    head: str

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.server, *args)

    def review(self, user: str, state: str = "APPROVED", commit: str | None = None) -> None:
        reviews = self.repo.prs[1].setdefault("_reviews", [])
        reviews.append(
            {"id": len(reviews) + 1, "user": user, "state": state, "commit_id": commit or self.head}
        )

    def classic_reviews(self, **rule: Any) -> None:
        resolution = rule.pop("conversations", False)
        protection: dict[str, Any] = {"required_conversation_resolution": {"enabled": resolution}}
        if rule:
            protection["required_pull_request_reviews"] = {
                "dismiss_stale_reviews": False,
                "require_code_owner_reviews": False,
                **rule,
            }
        self.repo.protection["main"] = protection

    def thread(self, resolved: bool) -> None:
        threads = self.repo.review_threads.setdefault(1, [])
        comment = {"id": 70 + len(threads), "user": "bob", "path": "a.py", "line": 3}
        threads.append({"resolved": resolved, "comments": [comment]})


@pytest.fixture
def world(forge_cli: ForgeCli) -> Iterator[World]:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = repo.add_commit("root")
        head = repo.add_commit("head", parents=[repo.branches["main"]])
        repo.add_pr(1, head_ref="feature", head_sha=head)
        repo.set_rulesets("main", [("ci", 15368)])
        repo.add_run(head, "ci", "success")
        repo.commit_users[head] = ("author", "author")
        yield World(run=forge_cli, server=server, repo=repo, head=head)


def _approved(w: World) -> None:
    w.classic_reviews(required_approving_review_count=1)
    w.review("bob")
    w.repo.prs[1]["_review_decision"] = "APPROVED"


def _classic_conversations_unresolved(w: World) -> None:
    # The case: no review required anywhere (decision null), classic protection asks
    # for resolved conversations, one is not.
    w.classic_reviews(conversations=True)
    w.thread(resolved=False)


def _classic_review_unapproved(w: World) -> None:
    w.classic_reviews(required_approving_review_count=1)
    w.repo.prs[1]["_review_decision"] = "REVIEW_REQUIRED"


def _ruleset_one_classic_two(w: World) -> None:
    w.repo.add_review_rule("main", required_approving_review_count=1)
    w.classic_reviews(required_approving_review_count=2)
    w.review("bob")
    w.repo.prs[1]["_review_decision"] = "REVIEW_REQUIRED"


def _ruleset_review_classic_conversations(w: World) -> None:
    w.repo.add_review_rule("main", required_approving_review_count=1)
    w.classic_reviews(conversations=True)
    w.review("bob")
    w.thread(resolved=False)
    w.repo.prs[1]["_review_decision"] = "APPROVED"


def _stale_approval(w: World) -> None:
    w.classic_reviews(required_approving_review_count=1, dismiss_stale_reviews=True)
    w.review("bob", commit=w.repo.branches["main"])
    w.repo.prs[1]["_review_decision"] = "REVIEW_REQUIRED"


def _unknown_pusher(w: World) -> None:
    w.classic_reviews(required_approving_review_count=1, require_last_push_approval=True)
    w.repo.commit_users[w.head] = (None, None)
    w.review("bob")
    w.repo.prs[1]["_review_decision"] = "APPROVED"


def _unlinked_committer(w: World) -> None:
    w.classic_reviews(required_approving_review_count=1, require_last_push_approval=True)
    w.repo.commit_users[w.head] = ("author", None)
    w.review("bob")
    w.repo.prs[1]["_review_decision"] = "APPROVED"


def _changes_requested(w: World) -> None:
    w.review("bob", "CHANGES_REQUESTED")
    w.repo.prs[1]["_review_decision"] = "CHANGES_REQUESTED"


def _decision_only(w: World) -> None:
    # Nothing the package can read asks for a review, yet GitHub says one is required.
    w.repo.prs[1]["_review_decision"] = "REVIEW_REQUIRED"


def _hidden_protection(w: World) -> None:
    _approved(w)
    w.repo.admins.clear()


STATES: dict[str, Callable[[World], None]] = {
    "approved": _approved,
    "classic-conversations-unresolved": _classic_conversations_unresolved,
    "classic-review-unapproved": _classic_review_unapproved,
    "ruleset-1-classic-2": _ruleset_one_classic_two,
    "ruleset-review-classic-conversations": _ruleset_review_classic_conversations,
    "stale-approval": _stale_approval,
    "unknown-pusher": _unknown_pusher,
    "unlinked-committer": _unlinked_committer,
    "changes-requested": _changes_requested,
    "decision-only": _decision_only,
    "hidden-protection": _hidden_protection,
}
# What both must say: ready, or the review blockers (None: no verdict, a failed read).
EXPECTED: dict[str, list[str] | None] = {
    "approved": [],
    "classic-conversations-unresolved": ["threads-unresolved"],
    "classic-review-unapproved": ["approvals-missing"],
    "ruleset-1-classic-2": ["approvals-missing"],
    "ruleset-review-classic-conversations": ["threads-unresolved"],
    "stale-approval": ["approvals-missing"],
    "unknown-pusher": ["last-push-unapproved"],
    "unlinked-committer": ["last-push-unapproved"],
    "changes-requested": ["changes-requested"],
    "decision-only": ["review-required"],
    "hidden-protection": None,
}


@pytest.mark.parametrize("name", STATES)
def test_premerge_and_pr_status_agree(world: World, name: str) -> None:
    STATES[name](world)
    done = world.cli("premerge", f"{REPO}#1", world.head, "--approved-head", world.head, "--json")
    premerge = json.loads(done.stdout)
    status = world.cli("pr-status", f"{REPO}#1", "--json")
    expected = EXPECTED[name]
    if expected is None:
        # Classic protection hidden (no admin rights): a failed read for both, never a pass.
        assert premerge["ok"] is False
        assert any("cannot read branch protection" in r for r in premerge["reasons"])
        assert (status.returncode, status.stdout) == (1, "")
        assert "cannot read branch protection" in status.stderr
        return
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert premerge["ok"] is data["ready"] is (not expected), (premerge, data)
    assert [b["reason"] for b in premerge["blockers"]] == expected
    assert [b["reason"] for b in data["blockers"] if b["reason"] in REVIEW_REASONS] == expected
    assert [b["actor"] for b in premerge["blockers"]] == [
        b["actor"] for b in data["blockers"] if b["reason"] in REVIEW_REASONS
    ]
