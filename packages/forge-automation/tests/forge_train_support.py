"""Helpers shared by the forge's train and premerge tests (test modules never import each other).

`git`/`commit` drive a real clone with a fixed identity and no user or system git config;
`fake_train()` is the five-PR train world on fake_forge(); `words` and `AGAIN_THEN_MERGED` read
the train's lines without their shas; `job_log_failure` is the batched train's `explain` over the
local forge's simulated CI.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fakeforge import ForgeServer, sha_of
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    FakeForge,
    GhExec,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    TrainResult,
    fake_forge,
    forge_port,
    gh_cli_wire,
    run_train,
)

REPO = "acme/widgets"
LABEL = "merge-train"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

# #1 alone, with the base moved between its premerge and its merge: judged again, updated, merged.
AGAIN_THEN_MERGED = [
    f"TRAIN {REPO}",
    f"AGAIN {REPO}#1",
    f"UPDATED {REPO}#1",
    f"GREEN {REPO}#1",
    f"MERGED {REPO}#1",
    f"DONE {REPO}",
]


def git(clone: Path, *args: str) -> str:
    """Run git in `clone` with the test identity; return its stdout (stripped)."""
    done = subprocess.run(
        ["git", "-C", str(clone), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout.strip()


def commit(clone: Path, name: str, text: str, message: str) -> str:
    """Write `text` to `name` in `clone`, commit it with `message`; return the new head."""
    (clone / name).write_text(text)
    git(clone, "add", name)
    git(clone, "commit", "-q", "-m", message)
    return git(clone, "rev-parse", "HEAD")


def ci_run(sha: str, conclusion: CheckRunConclusion, run_id: int = 1) -> CheckRun:
    """Return Actions' completed check run `ci` on `sha` with `conclusion`."""
    return CheckRun(
        id=run_id,
        name="ci",
        status="completed",
        conclusion=conclusion,
        app_id=ACTIONS_APP_ID,
        head_sha=sha,
    )


def fake_train() -> FakeForge:
    """Return fake_forge() with strict `main` requiring `ci` and five labelled PRs: #1 and #5
    green, #2 conflicting, #3 red, #4 green but forked before main's tip (behind)."""
    forge = fake_forge()
    root = forge.add_commit(sha_of("root"), message="root")
    tip = forge.add_commit(sha_of("m1"), parents=[root], message="m1")
    forge.set_branch(REPO, "main", tip, default=True)
    rules = RequiredChecks(contexts=(RequiredContext(context="ci"),), strict=True)
    forge.set_rulesets(REPO, "main", rules)
    for number in range(1, 6):
        # #4 forked from main before m1: behind from the start.
        parent = root if number == 4 else tip
        head = forge.add_commit(sha_of(f"h{number}"), parents=[parent], message=f"Change {number}")
        forge.add_pr(
            REPO,
            PullRequest(
                number=number,
                state="open",
                head_sha=head,
                head_ref=f"topic{number}",
                head_repo=REPO,
                base_ref="main",
                title=f"Change {number}",
                mergeable_state="dirty" if number == 2 else "clean",
            ),
        )
        forge.set_pr_commits(REPO, number, [head])
        forge.set_runs(head, [ci_run(head, "failure" if number == 3 else "success")])
        forge.set_labels(REPO, number, [LABEL, "keep"])
    return forge


def words(lines: list[str]) -> list[str]:
    """Each line's verb and PR (or repo), without shas."""
    return [" ".join(line.split(":")[0].split()[:2]) for line in lines]


def ride_batch(gh: GhExec, clone: str, lines: list[str], **extra: object) -> TrainResult:
    """Run the batched train over the local forge through the real gh (`gh`, an exec), fast
    polls and no reread delays; its lines go to `lines`; `extra` adds or overrides keywords."""
    options: dict[str, object] = {
        "batch": 2,
        "interval": 0.05,
        "timeout": 60,
        "delays": (),
        **extra,
    }
    return run_train(
        forge_port(gh_cli_wire(gh)),
        REPO,
        LABEL,
        emit=lines.append,
        clone=clone,
        **options,  # type: ignore[arg-type]
    )


def job_log_failure(server: ForgeServer, sha: str, check: str) -> str | None:
    """The first failure line of `check` at `sha` in `REPO`, read from the local forge's job log
    (what `ci-failures` reads through the forge)."""
    repo = server.state.repo(REPO)
    runs = [r for r in repo.check_runs if r["head_sha"] == sha and r["name"] == check]
    if not runs or runs[-1].get("conclusion") != "failure":
        return None
    log = repo.job_logs.get(int(runs[-1]["id"]), b"").decode()
    return next((line for line in log.splitlines() if line.startswith("FAILED ")), None)
