"""The forge the forge-automation README's gh examples run against: the real `gh`, logged in to
the local forge API of the package's own tests (`fakeforge.ForgeServer`), which holds
`acme/widgets` with PR #42 (required check `ci` green, `lint` failed without a log but with an
annotation, strict base), and `acme/gadgets` (strict base, `ci` required), where the merge example merges PR #5 (green, two
commits, one by a co-author) and the train example runs over #6 (green), #7 (red) and #8 (green),
labelled `merge-train`; CI on a head update-branch writes repeats the old head's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fakeforge import ForgeServer, ForgeState

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
    _gadgets(state)
    with ForgeServer(state) as server:
        yield server.env()


def _gadgets(state: ForgeState) -> None:
    repo = state.repo("acme/gadgets")
    base = repo.add_commit("main-0", message="Initial commit")
    repo.branches["main"] = base
    repo.set_rulesets("main", ["ci"], strict=True)
    one = repo.add_commit("retry-1", parents=(base,), message="Add backoff\n\nWraps the call.")
    two = repo.add_commit("retry-2", parents=(one,), message="Cap the delay")
    repo.commit_authors[one] = ("Ann Author", "ann@example.org", "author")  # the PR's author
    repo.commit_authors[two] = ("Bea Co", "bea@example.org", "bea")
    repo.add_pr(5, head_ref="add-retry", head_sha=two, title="Add retry", body="Retries.")
    repo.pr_commits[5] = [one, two]
    repo.add_run(two, "ci", "success")
    for number, (branch, title, ci) in enumerate(
        (
            ("add-docs", "Add docs", "success"),
            ("fix-lint", "Fix lint", "failure"),
            ("bump-deps", "Bump deps", "success"),
        ),
        start=6,
    ):
        head = repo.add_commit(branch, parents=(base,), message=title)
        repo.add_pr(number, head_ref=branch, head_sha=head, title=title, body=f"{title}.")
        repo.pr_commits[number] = [head]
        repo.add_run(head, "ci", ci)
        repo.labels[number] = ["merge-train"]

    def ci_repeats(number: int, old: str, new: str) -> None:
        for run in [r for r in repo.check_runs if r["head_sha"] == old]:
            repo.add_run(new, run["name"], run["conclusion"])

    repo.after_update = ci_repeats
