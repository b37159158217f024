"""What the fake offers beyond the contract: faults, the git seam, records and counters."""

from __future__ import annotations

import pytest

from forge_automation import (
    FAKE_APP_ID,
    CheckRun,
    ExecOptions,
    ForgeCliError,
    NotModified,
    OpenPrsList,
    PullRequest,
    fake_forge,
    forge_port,
)

REPO = "acme/widgets"
BASE = "b" * 40
HEAD = "d" * 40


def _pr(number: int = 1, head: str = HEAD) -> PullRequest:
    return PullRequest(
        number=number,
        state="open",
        head_sha=head,
        head_ref="topic",
        head_repo=REPO,
        base_ref="main",
    )


def test_compare_fault_fails_the_next_read_only() -> None:
    fake = fake_forge()
    fake.add_commit(BASE)
    fake.add_commit(HEAD, parents=[BASE])
    fake.set_branch(REPO, "main", BASE, default=True)
    port = forge_port(fake.wire)
    fake.read_faults.compare_ancestry = True
    with pytest.raises(ForgeCliError):
        port.compare_ancestry(REPO, "main", HEAD)
    assert port.compare_ancestry(REPO, "main", HEAD) == "ahead"


def test_pr_heads_count_as_known_commits() -> None:
    fake = fake_forge()
    fake.set_branch(REPO, "main", BASE, default=True)
    fake.add_pr(REPO, _pr(head="e" * 40))
    assert forge_port(fake.wire).compare_ancestry(REPO, "main", "e" * 40) == "ahead"


def test_git_exec_answers_the_current_pr_head_and_faults_once() -> None:
    fake = fake_forge()
    fake.add_pr(REPO, _pr(7))
    args = ["ls-remote", "--", "https://github.com/acme/widgets.git", "refs/pull/7/head"]
    first = fake.git_exec(args, ExecOptions())
    assert first.returncode == 0
    assert first.stdout == f"{HEAD}\trefs/pull/7/head\n".encode()
    fake.update_pr(REPO, 7, head_sha="f" * 40)
    assert fake.git_exec(args, ExecOptions()).stdout.startswith(b"f" * 40)
    fake.read_faults.ls_remote = True
    assert fake.git_exec(args, ExecOptions()).returncode != 0
    assert fake.git_exec(args, ExecOptions()).returncode == 0
    missing = ["ls-remote", "--", "https://github.com/acme/widgets.git", "refs/pull/8/head"]
    assert fake.git_exec(missing, ExecOptions()).stdout == b""


def test_created_check_runs_are_recorded_under_the_app_id() -> None:
    fake = fake_forge()
    port = forge_port(fake.wire)
    run = port.create_check_run(
        REPO,
        name="gate",
        head_sha=HEAD,
        conclusion="success",
        title="t",
        summary="s",
        external_id="task-1",
    )
    assert run.app_id == FAKE_APP_ID
    [record] = fake.created_check_runs
    assert (record.id, record.repo, record.app_id) == (run.id, REPO, FAKE_APP_ID)
    assert record.request.external_id == "task-1"
    assert port.latest_check_runs(REPO, HEAD) == (run,)
    other = fake_forge(app_id=5)
    assert (
        forge_port(other.wire)
        .create_check_run(
            REPO, name="g", head_sha=HEAD, conclusion="failure", title="t", summary="s"
        )
        .app_id
        == 5
    )


def test_set_runs_keeps_superseded_runs_for_check_runs() -> None:
    fake = fake_forge()
    old = CheckRun(
        id=1, name="t", status="completed", conclusion="failure", app_id=1, head_sha=HEAD
    )
    new = CheckRun(
        id=2, name="t", status="completed", conclusion="success", app_id=1, head_sha=HEAD
    )
    fake.set_runs(HEAD, [old, new])
    port = forge_port(fake.wire)
    assert port.check_runs(REPO, HEAD) == (old, new)
    assert port.latest_check_runs(REPO, HEAD) == (new,)


def test_not_modified_counts_304s_and_calls_are_counted() -> None:
    fake = fake_forge()
    fake.add_pr(REPO, _pr())
    port = forge_port(fake.wire)
    listed = port.revalidate_open_prs(REPO, None)
    assert isinstance(listed, OpenPrsList)
    assert isinstance(port.revalidate_open_prs(REPO, listed.etag), NotModified)
    assert fake.not_modified == 1
    assert fake.calls["list_open_prs"] == 2
    assert sum(fake.effects.values()) == 0


def test_missing_pr_comment_is_404() -> None:
    fake = fake_forge()
    with pytest.raises(ForgeCliError) as caught:
        forge_port(fake.wire).upsert_comment(REPO, 3, "<!-- m -->", "body")
    assert caught.value.status == 404
