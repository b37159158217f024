"""The forge the forge-automation README's gh examples run against: the real `gh`, logged in to
the local forge API of the package's own tests (`forge_support.ForgeServer`), which holds
`acme/widgets` with PR #42 (required check `ci` green, `lint` failed without a log but with an
annotation, strict base)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from forge_support import ForgeServer, ForgeState

__all__ = ["readme_forge"]


@contextmanager
def readme_forge() -> Iterator[dict[str, str]]:
    """Serve the README's repository; yield the environment a logged-in `gh` has there."""
    state = ForgeState()
    repo = state.repo("acme/widgets")
    base = repo.add_commit("main-0", message="Initial commit")
    repo.branches["main"] = base
    head = repo.add_commit("add-retry", parents=(base,), message="Add retry")
    repo.add_pr(42, head_ref="add-retry", head_sha=head, title="Add retry", body="Retries.")
    repo.pr_files[42] = [{"filename": "retry.py", "status": "added"}]
    repo.set_rulesets("main", ["ci"], strict=True)
    repo.add_run(head, "ci", "success", run_id=880)
    # The lint job's log is gone; ci-failures shows its annotations and summary instead.
    lint = repo.add_run(head, "lint", "failure", run_id=881)
    lint["output"] = {"title": "1 error", "summary": "ruff found 1 error.", "annotations_count": 1}
    repo.annotations[881] = [
        {"path": "retry.py", "start_line": 3, "message": "F401 `time` imported but unused"}
    ]
    repo.add_run(head, "docs", "success", run_id=882)
    repo.add_run(head, "typecheck", "success", run_id=883)
    with ForgeServer(state) as server:
        yield server.env()
