"""forge-cli pr-status: one GraphQL read, REST only for what it cannot answer whole.

Real subprocesses, real gh, the local forge (whose GraphQL endpoint executes each document
against GitHub's published schema). These tests pin that the usual PR costs one request, that
each part the document cannot answer whole (another page, a strict base the head may be behind,
rulesets that require nothing, an `errors` entry) is read over REST exactly as before, and that
the runs judged are always the PR head's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakeforge import ForgeServer, RepoState
from forge_builders import GreenPr

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def cli(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FORGE_CLI, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        timeout=120,
        check=False,
    )


def requested(server: ForgeServer) -> list[str]:
    """Return each request as `METHOD path?query`, in arrival order."""
    return [f"{r.method} {r.url.split('api.github.localhost', 1)[1]}" for r in server.requests()]


# Classic protection, read beside the document for every open PR: GitHub layers it on the
# rulesets, and the document cannot ask for it.
PROTECTION = f"GET /repos/{REPO}/branches/main/protection"


def by_sha(sha: str, page: int = 1) -> str:
    return f"GET /repos/{REPO}/commits/{sha}/check-runs?filter=all&per_page=100&page={page}"


def status(server: ForgeServer, *extra: str) -> dict[str, Any]:
    done = cli(server, "pr-status", f"{REPO}#1", "--json", *extra)
    assert (done.returncode, done.stderr) == (0, "")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def reasons(data: dict[str, Any]) -> list[str]:
    return [b["reason"] for b in data["blockers"]]


# -- the usual case: one request ----------------------------------------------------------------


def test_the_usual_pr_is_one_graphql_request_and_its_protection(
    green_pr: GreenPr, server: ForgeServer, repo: RepoState
) -> None:
    head = green_pr(strict=True)
    server.clear_log()
    done = cli(server, "pr-status", f"{REPO}#1")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{REPO}#1 open head={head[:7]} mergeable=clean checks=1/1 failing=- ready blockers=none\n"
    )
    # Strict, yet no compare: the base tip is among the head's ancestors the document read.
    assert requested(server) == ["POST /graphql", PROTECTION]
    assert server.state.graphql_ops == {"PullRequestSnapshot": 1}


def test_every_run_of_every_suite_counts_a_superseded_failure_included(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", [("ci", 15368), ("deploy", 4242)])
    repo.add_run(head, "ci", "failure")
    repo.add_run(head, "ci", "success")  # a rerun does not erase the failed attempt
    repo.add_run(head, "deploy", "success", app_id=4242)
    repo.add_run(head, "extra", None, app_id=4242)  # unfinished: holds the merge
    server.clear_log()
    data = status(server)
    assert data["checks"] == {"passed": 2, "total": 3, "failing": []}
    assert reasons(data) == ["check-failed", "check-pending"]
    assert requested(server) == ["POST /graphql", PROTECTION]


def test_a_closed_pr_needs_no_behind_count(server: ForgeServer, repo: RepoState) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.branches["main"] = repo.add_commit("moved", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head, state="closed")
    repo.set_rulesets("main", ["ci"], strict=True)
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    assert (data["state"], reasons(data)) == ("closed", ["pr-closed"])
    assert requested(server) == ["POST /graphql"]


def test_a_missing_pr_or_repository_is_exit_64(server: ForgeServer, repo: RepoState) -> None:
    for ref in (f"{REPO}#9", "acme/nowhere#1"):
        done = cli(server, "pr-status", ref)
        assert (done.returncode, done.stdout) == (64, "")
        assert done.stderr == f"forge-cli: pr-status: no PR {ref} (or no access to it)\n"


# -- what the document cannot answer whole is read over REST, as before --------------------------


def test_a_strict_base_the_head_is_behind_reads_the_behind_count(
    server: ForgeServer, repo: RepoState
) -> None:
    base = "release/v1+2"  # quoted in the compare's path
    repo.branches[base] = repo.branches["main"]
    head = repo.add_commit("head", parents=[repo.branches[base]])
    repo.branches[base] = repo.add_commit("moved", parents=[repo.branches[base]])
    repo.add_pr(1, head_ref="feature", head_sha=head, base_ref=base)
    repo.set_rulesets(base, ["ci"], strict=True)
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    assert reasons(data) == ["behind-base"]
    assert "is behind by 1 commits" in data["blockers"][0]["detail"]
    assert requested(server) == [
        "POST /graphql",
        f"GET /repos/{REPO}/branches/release/v1%2B2/protection",
        f"GET /repos/{REPO}/compare/release/v1%2B2...{head}?per_page=1",
    ]


def test_a_base_that_is_not_strict_needs_no_behind_count(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.branches["main"] = repo.add_commit("moved", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    server.clear_log()
    assert status(server)["ready"] is True
    assert requested(server) == ["POST /graphql", PROTECTION]


def test_rulesets_requiring_nothing_read_classic_protection(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.branches["main"] = repo.add_commit("moved", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.classic["main"] = {"strict": True, "contexts": ["ci"], "checks": []}
    repo.add_run(head, "ci", "success")
    server.clear_log()
    data = status(server)
    # Classic's strict rule, read over REST, then asks for the behind count too.
    assert reasons(data) == ["behind-base"]
    assert requested(server) == [
        "POST /graphql",
        PROTECTION,
        f"GET /repos/{REPO}/compare/main...{head}?per_page=1",
    ]


def test_no_required_check_anywhere_is_refused(
    green_pr: GreenPr, server: ForgeServer, repo: RepoState
) -> None:
    green_pr(required=())
    data = status(server)
    assert reasons(data) == ["no-required-checks"]


def test_more_than_one_page_of_runs_is_read_whole_by_sha(
    server: ForgeServer, repo: RepoState
) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["c0"])
    for i in range(100):
        repo.add_run(head, f"c{i}", "success")
    repo.add_run(head, "late", "failure")
    server.clear_log()
    data = status(server)
    assert data["checks"] == {"passed": 100, "total": 101, "failing": ["late"]}
    assert requested(server) == ["POST /graphql", PROTECTION, by_sha(head, 1), by_sha(head, 2)]


def test_a_graphql_error_reads_every_part_over_rest(
    green_pr: GreenPr, server: ForgeServer, repo: RepoState
) -> None:
    head = green_pr(strict=True)
    server.state.graphql_faults.append({"type": "FORBIDDEN", "message": "Resource not accessible"})
    server.clear_log()
    data = status(server)
    assert (data["ready"], data["headSha"]) == (True, head)
    assert sorted(requested(server)) == sorted(
        [
            "POST /graphql",
            f"GET /repos/{REPO}/pulls/1",
            f"GET /repos/{REPO}/rules/branches/main?per_page=100&page=1",
            PROTECTION,
            by_sha(head),
            f"GET /repos/{REPO}/compare/main...{head}?per_page=1",
            # The review state, after the rules: reviews and requests, then the threads.
            "POST /graphql",
            "POST /graphql",
        ]
    )


def test_pr_status_never_loads_typer(server: ForgeServer, repo: RepoState) -> None:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    code = (
        "import sys\n"
        "from forge_automation import cli\n"
        "try:\n"
        f"    cli.main(['pr-status', '{REPO}#1'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        check=True,
        timeout=60,
    )
    assert done.stdout.startswith(f"{REPO}#1 open ")
    # Nor the shutil (bz2, lzma) argparse's help formatter would import without the width the
    # parser gives it.
    assert set(done.stderr.split()).isdisjoint(
        {"typer", "click", "pydantic", "rich", "shutil", "lzma"}
    )


def test_an_in_process_pr_status_leaves_the_callers_collector_as_it_was(
    server: ForgeServer, repo: RepoState
) -> None:
    # pr-status pauses the collector while it runs, and the console script freezes what is left
    # just before the process exits; a caller that runs `main(argv)` in its own process keeps
    # its collector on and nothing of its own frozen.
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    code = (
        "import gc, sys\n"
        "from forge_automation import cli\n"
        "try:\n"
        f"    cli.main(['pr-status', '{REPO}#1'])\n"
        "except SystemExit as done:\n"
        "    print(done.code, gc.isenabled(), gc.get_freeze_count(), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env()},
        check=True,
        timeout=60,
    )
    assert done.stdout.startswith(f"{REPO}#1 open ")
    assert done.stderr.split() == ["0", "True", "0"]


# -- reviews: from the same document, read on only where it cannot answer whole --------------------


def _reviewed_pr(repo: RepoState) -> str:
    head = repo.add_commit("head", parents=[repo.branches["main"]])
    repo.add_pr(1, head_ref="feature", head_sha=head)
    repo.set_rulesets("main", ["ci"])
    repo.add_run(head, "ci", "success")
    repo.commit_users[head] = ("author", "author")
    return head


def test_review_blockers_in_one_graphql_request_with_their_actors(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _reviewed_pr(repo)
    repo.add_review_rule(
        "main",
        required_approving_review_count=2,
        require_last_push_approval=True,
        required_review_thread_resolution=True,
    )
    repo.prs[1]["_reviews"] = [
        {"id": 1, "user": "bob", "state": "CHANGES_REQUESTED", "commit_id": head},
        {"id": 2, "user": "cy", "state": "APPROVED", "commit_id": head, "can_push": False},
    ]
    repo.prs[1]["_review_requests"] = [{"login": "dee"}]
    repo.prs[1]["_review_decision"] = "CHANGES_REQUESTED"
    repo.review_threads[1] = [
        {"resolved": False, "comments": [{"id": 7, "user": "bob", "path": "a.py", "line": 3}]}
    ]
    server.clear_log()
    data = status(server)
    assert [(b["reason"], b["actor"]) for b in data["blockers"]] == [
        ("changes-requested", "author"),
        ("approvals-missing", "reviewer"),
        ("last-push-unapproved", "reviewer"),
        ("review-requested", "reviewer"),
        ("threads-unresolved", "author"),
    ]
    assert data["ready"] is False
    assert requested(server) == ["POST /graphql", PROTECTION]
    done = cli(server, "pr-status", f"{REPO}#1")
    line = done.stdout
    assert "blocked blockers=changes-requested: bob requested changes;" in line
    assert (
        "; threads-unresolved: main (ruleset rule) requires every review thread resolved; " in line
    )
    assert line.endswith("1 unresolved: a.py:3 [actor: author]\n")


def test_an_approved_pr_is_ready_in_one_graphql_request(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _reviewed_pr(repo)
    repo.add_review_rule("main", required_approving_review_count=1)
    repo.prs[1]["_reviews"] = [{"id": 1, "user": "bob", "state": "APPROVED", "commit_id": head}]
    repo.prs[1]["_review_decision"] = "APPROVED"
    server.clear_log()
    assert status(server)["ready"] is True
    assert requested(server) == ["POST /graphql", PROTECTION]


def test_past_a_page_of_reviews_or_threads_the_state_is_read_whole(
    server: ForgeServer, repo: RepoState
) -> None:
    head = _reviewed_pr(repo)
    repo.add_review_rule("main", required_approving_review_count=1)
    # The approval is the 101st review: only the full read sees it.
    repo.prs[1]["_reviews"] = [
        {"id": i, "user": f"r{i}", "state": "COMMENTED", "commit_id": head} for i in range(100)
    ] + [{"id": 100, "user": "bob", "state": "APPROVED", "commit_id": head}]
    server.clear_log()
    assert status(server)["ready"] is True
    assert server.state.graphql_ops["PullRequestReviewState"] == 2
    assert server.state.graphql_ops["PullRequestReviewThreads"] == 1
    # 101 threads, one unresolved past the first page.
    repo.review_threads[1] = [{"resolved": True, "comments": [{"id": i}]} for i in range(100)]
    repo.review_threads[1].append({"resolved": False, "comments": [{"id": 999, "path": "z.py"}]})
    repo.rulesets["main"][-1]["parameters"]["required_review_thread_resolution"] = True
    assert reasons(status(server)) == ["threads-unresolved"]


def test_classic_review_rules_are_read_when_the_forge_requires_a_review(
    server: ForgeServer, repo: RepoState
) -> None:
    _reviewed_pr(repo)
    repo.protection["main"] = {
        "required_pull_request_reviews": {
            "dismiss_stale_reviews": False,
            "require_code_owner_reviews": True,
            "required_approving_review_count": 1,
        }
    }
    repo.prs[1]["_review_requests"] = [{"team": "acme/core", "as_code_owner": True}]
    repo.prs[1]["_review_decision"] = "REVIEW_REQUIRED"
    server.clear_log()
    data = status(server)
    assert [(b["reason"], b["actor"]) for b in data["blockers"]] == [
        ("approvals-missing", "reviewer"),
        ("code-owner-review-missing", "reviewer"),
    ]
    assert "acme/core" in data["blockers"][1]["detail"]
    assert requested(server) == ["POST /graphql", PROTECTION]


def test_a_review_read_that_fails_fails_the_status(server: ForgeServer, repo: RepoState) -> None:
    _reviewed_pr(repo)
    repo.prs[1]["_reviews"] = [
        {"id": i, "user": f"r{i}", "state": "COMMENTED", "commit_id": "0" * 40} for i in range(101)
    ]
    # The document fails (every part is read over REST), then so does the read of the reviews:
    # no status line, exit 1.
    server.state.graphql_faults.extend(
        [{"type": "FORBIDDEN", "message": "Resource not accessible"}, {"message": "Went wrong"}]
    )
    done = cli(server, "pr-status", f"{REPO}#1")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "GraphQL error" in done.stderr


def test_a_merged_pr_reads_no_review_state(server: ForgeServer, repo: RepoState) -> None:
    _reviewed_pr(repo)
    repo.prs[1].update(state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
    repo.prs[1]["_reviews"] = [
        {"id": i, "user": f"r{i}", "state": "COMMENTED", "commit_id": "0" * 40} for i in range(101)
    ]
    server.clear_log()
    assert "pr-merged" in reasons(status(server))
    assert requested(server) == ["POST /graphql"]
