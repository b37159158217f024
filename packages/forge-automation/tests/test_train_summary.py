"""forge-cli train --batch's one marker comment: the train's live summary on the label's issue,
through the real gh against the local forge, killed at each of its writes and rerun."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from fakeforge import ForgeServer, RepoState
from fakeforge.gitrepo import train_world
from forge_automation import ExecOptions, ExecResult
from forge_train_support import LABEL, REPO, ride_batch

pytestmark = pytest.mark.gh  # they run the real gh: see make test-gh-newest

MARKER = f"<!-- forge-cli train summary: {LABEL} -->"


class _Crash(BaseException):
    """The process dies here."""


def _summary(repo: RepoState) -> dict[str, object]:
    (issue,) = repo.issues
    (comment,) = repo.comments[issue]
    assert comment["body"].startswith(MARKER + "\n")
    state = comment["body"].splitlines()[-1]
    text = unquote(state.removeprefix("<!-- forge-cli train state: ")[:-4])
    loaded: dict[str, object] = json.loads(text)
    return loaded


def _seed_summary(repo: RepoState, state_line: str) -> None:
    """An earlier train's summary on the label's issue #50, its state line `state_line`."""
    repo.issues[50] = {
        "title": f"forge-cli train: {LABEL}",
        "body": "x",
        "user": {"login": "forge-bot"},
        "created_at": "2024-01-02T00:00:00Z",
    }
    repo.labels[50] = [LABEL]
    repo.comments[50] = [
        {"id": 9001, "user": {"login": "forge-bot"}, "body": f"{MARKER}\n{state_line}"}
    ]


def _is_write(args: Sequence[str]) -> bool:
    # The summary's comment writes: POST .../issues/<n>/comments and PATCH .../issues/comments/<id>.
    text = " ".join(args)
    return ("--method POST" in text and "/comments" in text) or "--method PATCH" in text


@pytest.mark.parametrize(("write", "before"), [(1, False), (2, True), (2, False), (3, True)])
def test_a_kill_at_a_summary_write_then_a_rerun_leaves_one_summary_with_every_merge(
    tmp_path: Path, write: int, before: bool
) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=3, duration=0.1)
        gh = server.exec()
        seen = [0]

        def dying_gh(args: Sequence[str], options: ExecOptions) -> ExecResult:
            hit = _is_write(args) and seen[0] + 1 == write
            seen[0] += _is_write(args)
            if hit and before:
                raise _Crash
            done = gh(args, options)
            if hit:
                raise _Crash
            return done

        lines: list[str] = []
        for wire in (dying_gh, gh):
            lines = []
            try:
                result = ride_batch(wire, clone, lines, batch=3, grace=30)
            except _Crash:
                continue
        assert result.stopped is None, lines
        assert all(repo.prs[n]["merged"] for n in (1, 2, 3))
        assert server.state.effects["update_ref"] + server.state.effects["merge_pr"] == 3
        assert server.state.effects["create_issue"] == 1
        state = _summary(repo)
        assert state == {"status": "done", "merged": [1, 2, 3], "dropped": [], "flaky": []}
        (issue,) = repo.issues.values()
        assert issue["title"] == f"forge-cli train: {LABEL}"
        assert all(not repo.comments.get(n) for n in (1, 2, 3))


def test_a_rerun_after_done_with_nothing_to_do_keeps_the_summary(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1)
        for _ in range(2):
            ride_batch(server.exec(), clone, [], grace=30)
        assert _summary(repo) == {"status": "done", "merged": [1], "dropped": [], "flaky": []}
        assert server.state.effects["update_issue_comment"] <= 2


def test_a_summary_edited_out_of_shape_starts_afresh_with_a_note(tmp_path: Path) -> None:
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1)
        _seed_summary(repo, '<!-- forge-cli train state: {"status":"running","merged":["#9"]} -->')
        lines: list[str] = []
        ride_batch(server.exec(), clone, lines, grace=30)
        assert f"NOTE {REPO}#50: the train's summary does not read; it starts afresh" in lines
        assert _summary(repo) == {"status": "done", "merged": [1], "dropped": [], "flaky": []}
        assert server.state.effects["create_issue"] == 0


def test_a_check_name_holding_the_comment_end_stays_inside_the_state_comment(
    tmp_path: Path,
) -> None:
    # `-->` in a flake's check name would end the hidden state comment early on GitHub's page;
    # a JSON escape such as `\u003e` is rewritten by Debian's gh (2.23) when the comment is read.
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        clone = train_world(repo, str(tmp_path), prs=1, duration=0.1)
        names = ["a-->b", "c\\u003ed"]
        earlier = json.dumps({"status": "running", "merged": [], "dropped": [], "flaky": names})
        escaped = quote(earlier, safe=' {}[]":,')
        _seed_summary(repo, f"<!-- forge-cli train state: {escaped} -->")
        ride_batch(server.exec(), clone, [], grace=30)
        body = repo.comments[50][0]["body"]
        assert body.splitlines()[-1].count(">") == 1  # the comment's own end
        assert _summary(repo) == {
            "status": "done",
            "merged": [1],
            "dropped": [],
            "flaky": names,
        }
