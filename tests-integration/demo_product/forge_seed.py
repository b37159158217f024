"""A seeded in-memory forge for the demo: one repository, a few PRs in different states."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field

from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    CheckStatus,
    FakeForge,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    fake_forge,
)

__all__ = ["DEMO_REPO", "DemoForge", "seed_forge"]

DEMO_REPO = "demo/widgets"
_RUN_IDS = itertools.count(5000)


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _run(
    name: str, head: str, status: CheckStatus, conclusion: CheckRunConclusion | None
) -> CheckRun:
    return CheckRun(
        id=next(_RUN_IDS),
        name=name,
        status=status,
        conclusion=conclusion,
        app_id=ACTIONS_APP_ID,
        head_sha=head,
        completed_at="2026-11-23T08:00:00Z" if status == "completed" else None,
    )


@dataclass(slots=True)
class DemoForge:
    """The fake forge plus the moves the demo plays on it to show live updates."""

    forge: FakeForge
    repo: str = DEMO_REPO
    heads: dict[int, str] = field(default_factory=dict)
    step: int = 0

    def advance(self) -> str:
        """Play the next move (a pending check finishing, a new push...); return what changed."""
        self.step += 1
        move = self.step % 3
        if move == 1:
            head = self.heads[3]
            self.forge.set_runs(
                head,
                [
                    _run("test", head, "completed", "success"),
                    _run("lint", head, "completed", "success"),
                ],
            )
            return "#3: checks finished green"
        if move == 2:
            head = _sha(f"pr3-push-{self.step}")
            self.forge.add_commit(head, parents=(self.heads[3],))
            self.heads[3] = head
            self.forge.update_pr(self.repo, 3, head_sha=head)
            self.forge.set_runs(
                head,
                [
                    _run("test", head, "in_progress", None),
                    _run("lint", head, "completed", "success"),
                ],
            )
            return "#3: new push, checks running"
        head = self.heads[2]
        self.forge.set_runs(
            head,
            [
                _run("test", head, "completed", "failure"),
                _run("test", head, "completed", "success"),
                _run("lint", head, "completed", "success"),
            ],
        )
        return "#2: test re-run passed (the superseded failure still blocks)"


def seed_forge() -> DemoForge:
    """Build the demo repository: required `test` and `lint` from the built-in CI, four PRs."""
    forge = fake_forge()
    repo = DEMO_REPO
    base = forge.add_commit(_sha("main-0"), message="Initial commit")
    forge.set_branch(repo, "main", base, default=True)
    forge.set_rulesets(
        repo,
        "main",
        RequiredChecks(
            contexts=(
                RequiredContext(context="test", app_id=ACTIONS_APP_ID),
                RequiredContext(context="lint", app_id=ACTIONS_APP_ID),
            )
        ),
    )
    demo = DemoForge(forge=forge)
    specs: list[tuple[int, str, CheckRunConclusion | None, CheckRunConclusion, bool]] = [
        (1, "Add a retry budget to the poller", "success", "success", False),
        (2, "Refactor the usage reader", "failure", "success", False),
        (3, "Status line: show weekly reset", None, "success", False),
        (4, "WIP: socket activation docs", "success", "success", True),
    ]
    for number, title, test, lint, draft in specs:
        head = forge.add_commit(_sha(f"pr{number}"), parents=(base,), message=title)
        demo.heads[number] = head
        forge.add_pr(
            repo,
            PullRequest(
                number=number,
                state="open",
                head_sha=head,
                head_ref=f"feature-{number}",
                head_repo=repo,
                base_ref="main",
                base_sha=base,
                mergeable_state="clean",
                draft=draft,
                title=title,
                body=f"Demo PR {number}.",
                changed_files=1,
                author="demo-dev",
            ),
        )
        runs = [
            _run("test", head, "completed" if test else "in_progress", test),
            _run("lint", head, "completed", lint),
        ]
        forge.set_runs(head, runs)
    return demo
