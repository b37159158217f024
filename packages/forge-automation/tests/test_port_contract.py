"""One port contract, run twice: against fake_forge() and against the real gh and a local forge."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

import pytest

from fakeforge import ForgeServer, RepoState, sha_of
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    CommitStatus,
    CompareFiles,
    FakeForge,
    FileEntry,
    FileListTruncatedError,
    ForcePush,
    ForcePushesTruncated,
    ForgeCliError,
    ForgeConflictError,
    ForgeInputError,
    ForgePort,
    ForgeWire,
    MergeableState,
    NotModified,
    OpenPrsList,
    ProtectionHidden,
    PullRequest,
    RequiredChecks,
    RequiredContext,
    Review,
    ReviewComment,
    ReviewDecision,
    ReviewRequest,
    ReviewRules,
    ReviewStateName,
    ReviewThread,
    StatusState,
    fake_forge,
    forge_port,
    gh_cli_wire,
    load_branch_rules,
    load_required_contexts,
    load_review_rules,
    load_review_state,
    merge_readiness,
)

REPO = "acme/widgets"
APP_ID = 777
APP_TOKEN = "ghs_contractapptoken000000000000000000"


def _strictest_of(one: ReviewRules, other: ReviewRules) -> ReviewRules:
    """Two rulesets' review rules as GitHub enforces them together (the stricter of each)."""
    return ReviewRules(
        required_approving_review_count=max(
            one.required_approving_review_count, other.required_approving_review_count
        ),
        require_code_owner_review=one.require_code_owner_review or other.require_code_owner_review,
        require_last_push_approval=one.require_last_push_approval
        or other.require_last_push_approval,
        dismiss_stale_reviews_on_push=one.dismiss_stale_reviews_on_push
        or other.dismiss_stale_reviews_on_push,
        required_review_thread_resolution=one.required_review_thread_resolution
        or other.required_review_thread_resolution,
        source="ruleset",
    )


class Backend(Protocol):
    port: ForgePort
    app_id: int

    def commit(self, name: str, parents: Sequence[str] = (), date: str = ...) -> str: ...
    def branch(self, name: str, sha: str) -> None: ...
    def pr(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        *,
        head_repo: str | None = REPO,
        title: str = "A change",
        mergeable_state: str = "clean",
    ) -> None: ...
    def update_pr(self, number: int, **fields: Any) -> None: ...
    def comment(self, number: int, author: str, body: str) -> None: ...
    def runs(self, sha: str, runs: Sequence[tuple[str, str | None, int]]) -> None: ...
    def statuses(self, sha: str, statuses: Sequence[tuple[str, str]]) -> None: ...
    def rulesets(
        self, branch: str, contexts: Sequence[tuple[str, int | None]], strict: bool
    ) -> None: ...
    def classic(self, branch: str, answer: Sequence[tuple[str, int | None]] | int) -> None: ...
    def files(self, number: int, count: int, changed_files: int | None = None) -> None: ...
    def pr_commits(self, number: int, shas: Sequence[str]) -> None: ...
    def compare_files(self, base: str, head: str, count: int) -> None: ...
    def review_threads(
        self, number: int, threads: Sequence[tuple[bool, Sequence[tuple[int, str, str]]]]
    ) -> None: ...
    def force_pushes(self, number: int, pushes: Sequence[tuple[str | None, str]]) -> None: ...
    def review_rule(self, branch: str, **parameters: Any) -> None: ...
    def classic_reviews(self, branch: str, rules: ReviewRules | int) -> None: ...

    def hide_protection(self) -> None:
        """Make the caller one without admin rights: protection reads answer 404 Not Found."""
        ...

    def reviews(self, number: int, reviews: Sequence[tuple[str, str, str, bool]]) -> None: ...
    def review_requests(
        self, number: int, requests: Sequence[tuple[str, bool, bool]], decision: str | None
    ) -> None: ...
    def commit_users(self, sha: str, author: str | None, committer: str | None) -> None: ...
    def effects(self, name: str) -> int: ...
    def user_lookups(self) -> int: ...
    def commit_message(self, sha: str) -> str: ...
    def authored(
        self, name: str, parents: Sequence[str], message: str, author: tuple[str, str, str | None]
    ) -> str: ...
    def set_labels(self, number: int, names: Sequence[str]) -> None: ...
    def labels(self, number: int) -> list[str]: ...
    def set_files(self, files: dict[str, str]) -> None: ...


class FakeBackend:
    def __init__(self) -> None:
        self.fake: FakeForge = fake_forge(app_id=APP_ID, user="forge-bot")
        self.port = forge_port(self.fake.wire)
        self.app_id = APP_ID

    def commit(
        self, name: str, parents: Sequence[str] = (), date: str = "2024-01-01T00:00:00Z"
    ) -> str:
        return self.fake.add_commit(
            sha_of(f"{REPO}:{name}"), parents=parents, message=name, date=date
        )

    def branch(self, name: str, sha: str) -> None:
        self.fake.set_branch(REPO, name, sha, default=name == "main")

    def pr(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        *,
        head_repo: str | None = REPO,
        title: str = "A change",
        mergeable_state: str = "clean",
    ) -> None:
        self.fake.add_pr(
            REPO,
            PullRequest(
                number=number,
                state="open",
                head_sha=head_sha,
                head_ref=head_ref,
                head_repo=head_repo,
                base_ref="main",
                title=title,
                mergeable_state=cast(MergeableState, mergeable_state),
            ),
        )

    def update_pr(self, number: int, **fields: Any) -> None:
        self.fake.update_pr(REPO, number, **fields)

    def comment(self, number: int, author: str, body: str) -> None:
        self.fake.add_comment(REPO, number, author=author, body=body)

    def runs(self, sha: str, runs: Sequence[tuple[str, str | None, int]]) -> None:
        self.fake.set_runs(
            sha,
            [
                CheckRun(
                    id=i + 1,
                    name=n,
                    status="completed" if c else "in_progress",
                    conclusion=cast("CheckRunConclusion | None", c),
                    app_id=a,
                    head_sha=sha,
                )
                for i, (n, c, a) in enumerate(runs)
            ],
        )

    def statuses(self, sha: str, statuses: Sequence[tuple[str, str]]) -> None:
        self.fake.set_statuses(
            sha, [CommitStatus(context=c, state=cast(StatusState, s)) for c, s in statuses]
        )

    def rulesets(
        self, branch: str, contexts: Sequence[tuple[str, int | None]], strict: bool
    ) -> None:
        rules = RequiredChecks(
            contexts=tuple(RequiredContext(context=c, app_id=a) for c, a in contexts), strict=strict
        )
        self.fake.set_rulesets(REPO, branch, rules)

    def classic(self, branch: str, answer: Sequence[tuple[str, int | None]] | int) -> None:
        if isinstance(answer, int):
            self.fake.set_classic_protection(REPO, branch, answer)
        else:
            self.fake.set_classic_protection(
                REPO,
                branch,
                RequiredChecks(
                    contexts=tuple(RequiredContext(context=c, app_id=a) for c, a in answer)
                ),
            )

    def files(self, number: int, count: int, changed_files: int | None = None) -> None:
        self.fake.pr_files[(REPO, number)] = [
            FileEntry(path=f"src/f{i}.py", status="added", additions=1)
            for i in range(min(count, 3000))
        ]
        self.fake.update_pr(
            REPO, number, changed_files=changed_files if changed_files is not None else count
        )

    def pr_commits(self, number: int, shas: Sequence[str]) -> None:
        self.fake.set_pr_commits(REPO, number, shas)

    def compare_files(self, base: str, head: str, count: int) -> None:
        files = tuple(FileEntry(path=f"f{i}", status="modified") for i in range(min(count, 300)))
        self.fake.set_compare(
            REPO, base, head, CompareFiles(merge_base_sha=base, files=files, truncated=False)
        )

    def review_threads(
        self, number: int, threads: Sequence[tuple[bool, Sequence[tuple[int, str, str]]]]
    ) -> None:
        self.fake.review_comments[(REPO, number)] = [
            ReviewComment(
                id=i,
                author=a,
                author_association="MEMBER",
                path="a.py",
                line=1,
                body=b,
                resolved=resolved,
                thread_id=f"T{t}",
            )
            for t, (resolved, comments) in enumerate(threads)
            for i, a, b in comments
        ]

    def force_pushes(self, number: int, pushes: Sequence[tuple[str | None, str]]) -> None:
        self.fake.force_pushes[(REPO, number)] = [ForcePush(before=b, after=a) for b, a in pushes]

    def review_rule(self, branch: str, **parameters: Any) -> None:
        checks = self.fake._state.rulesets.get((REPO, branch), RequiredChecks())
        rules = ReviewRules(source="ruleset", **parameters)
        if checks.reviews is not None:  # two rulesets: the forge enforces both
            rules = _strictest_of(checks.reviews, rules)
        self.fake.set_rulesets(REPO, branch, replace(checks, reviews=rules))

    def classic_reviews(self, branch: str, rules: ReviewRules | int) -> None:
        self.fake.set_classic_review_rules(REPO, branch, rules)

    def hide_protection(self) -> None:
        self.fake.hide_protection(REPO)

    def reviews(self, number: int, reviews: Sequence[tuple[str, str, str, bool]]) -> None:
        self.fake.reviews[(REPO, number)] = [
            Review(author=a, state=cast(ReviewStateName, s), commit_oid=c, author_can_push=p)
            for a, s, c, p in reviews
        ]

    def review_requests(
        self, number: int, requests: Sequence[tuple[str, bool, bool]], decision: str | None
    ) -> None:
        self.fake.review_requests[(REPO, number)] = [
            ReviewRequest(reviewer=r, team=t, as_code_owner=o) for r, t, o in requests
        ]
        self.fake.review_decisions[(REPO, number)] = cast("ReviewDecision | None", decision)

    def commit_users(self, sha: str, author: str | None, committer: str | None) -> None:
        self.fake.commit_users[sha] = tuple(dict.fromkeys(u for u in (author, committer) if u))
        if author is None or committer is None:
            self.fake.unlinked_commits.add(sha)

    def effects(self, name: str) -> int:
        return self.fake.effects[name]

    def user_lookups(self) -> int:
        return self.fake.calls["get_authenticated_user"]

    def commit_message(self, sha: str) -> str:
        return self.fake.commits[sha].message

    def authored(
        self, name: str, parents: Sequence[str], message: str, author: tuple[str, str, str | None]
    ) -> str:
        return self.fake.add_commit(
            sha_of(f"{REPO}:{name}"),
            parents=parents,
            message=message,
            author_name=author[0],
            author_email=author[1],
            author_login=author[2],
        )

    def set_labels(self, number: int, names: Sequence[str]) -> None:
        self.fake.set_labels(REPO, number, names)

    def labels(self, number: int) -> list[str]:
        return self.fake.labels(REPO, number)

    def set_files(self, files: dict[str, str]) -> None:
        self.fake.set_files(REPO, files)


class GhBackend:
    def __init__(self, server: ForgeServer) -> None:
        self.server = server
        server.state.app_tokens[APP_TOKEN] = APP_ID
        self.repo: RepoState = server.state.repo(REPO)
        self.port = forge_port(gh_cli_wire(server.exec(), app_token=lambda: APP_TOKEN))
        self.app_id = APP_ID

    def commit(
        self, name: str, parents: Sequence[str] = (), date: str = "2024-01-01T00:00:00Z"
    ) -> str:
        return self.repo.add_commit(name, parents=parents, date=date)

    def branch(self, name: str, sha: str) -> None:
        self.repo.branches[name] = sha

    def pr(
        self,
        number: int,
        head_ref: str,
        head_sha: str,
        *,
        head_repo: str | None = REPO,
        title: str = "A change",
        mergeable_state: str = "clean",
    ) -> None:
        self.repo.add_pr(
            number,
            head_ref=head_ref,
            head_sha=head_sha,
            head_repo=head_repo,
            title=title,
            mergeable_state=mergeable_state,
        )

    def update_pr(self, number: int, **fields: Any) -> None:
        pr = self.repo.prs[number]
        for key, value in fields.items():
            if key == "head_sha":
                pr["head"]["sha"] = value
            else:
                pr[key] = value

    def comment(self, number: int, author: str, body: str) -> None:
        self.repo.comments.setdefault(number, []).append(
            {"id": next(self.server.state.ids), "user": {"login": author}, "body": body}
        )

    def runs(self, sha: str, runs: Sequence[tuple[str, str | None, int]]) -> None:
        for n, c, a in runs:
            self.repo.check_runs.append(
                {
                    "id": next(self.server.state.ids),
                    "name": n,
                    "head_sha": sha,
                    "status": "completed" if c else "in_progress",
                    "conclusion": c,
                    "completed_at": None,
                    "app": {"id": a},
                }
            )

    def statuses(self, sha: str, statuses: Sequence[tuple[str, str]]) -> None:
        self.repo.statuses[sha] = [{"context": c, "state": s} for c, s in statuses]

    def rulesets(
        self, branch: str, contexts: Sequence[tuple[str, int | None]], strict: bool
    ) -> None:
        self.repo.rulesets[branch] = [
            # Another rule type beside the checks, as GitHub answers it: read, not mistaken.
            {
                "type": "pull_request",
                "parameters": {
                    "dismiss_stale_reviews_on_push": False,
                    "require_code_owner_review": False,
                    "require_last_push_approval": False,
                    "required_approving_review_count": 0,
                    "required_review_thread_resolution": False,
                },
            },
            {
                "type": "required_status_checks",
                "parameters": {
                    "strict_required_status_checks_policy": strict,
                    "required_status_checks": [
                        {"context": c, **({"integration_id": a} if a else {})} for c, a in contexts
                    ],
                },
            },
        ]

    def classic(self, branch: str, answer: Sequence[tuple[str, int | None]] | int) -> None:
        if isinstance(answer, int):
            self.repo.classic[branch] = answer
        else:
            self.repo.classic[branch] = {
                "strict": False,
                "contexts": [c for c, _ in answer],
                "checks": [{"context": c, "app_id": a} for c, a in answer],
            }

    def files(self, number: int, count: int, changed_files: int | None = None) -> None:
        self.repo.pr_files[number] = [
            {"filename": f"src/f{i}.py", "status": "added", "additions": 1, "deletions": 0}
            for i in range(count)
        ]
        if changed_files is not None:
            self.repo.prs[number]["changed_files"] = changed_files

    def pr_commits(self, number: int, shas: Sequence[str]) -> None:
        self.repo.pr_commits[number] = list(shas)

    def compare_files(self, base: str, head: str, count: int) -> None:
        self.repo.compare_files[(base, head)] = [
            {"filename": f"f{i}", "status": "modified", "additions": 0, "deletions": 0}
            for i in range(count)
        ]

    def review_threads(
        self, number: int, threads: Sequence[tuple[bool, Sequence[tuple[int, str, str]]]]
    ) -> None:
        self.repo.review_threads[number] = [
            {
                "resolved": resolved,
                "comments": [
                    {
                        "id": i,
                        "user": a,
                        "author_association": "MEMBER",
                        "path": "a.py",
                        "line": 1,
                        "body": b,
                    }
                    for i, a, b in comments
                ],
            }
            for resolved, comments in threads
        ]

    def force_pushes(self, number: int, pushes: Sequence[tuple[str | None, str]]) -> None:
        self.repo.force_pushes[number] = list(pushes)

    def review_rule(self, branch: str, **parameters: Any) -> None:
        self.repo.add_review_rule(branch, **parameters)

    def hide_protection(self) -> None:
        self.repo.admins.clear()

    def classic_reviews(self, branch: str, rules: ReviewRules | int) -> None:
        if isinstance(rules, int):
            self.repo.classic[branch] = rules
            return
        protection: dict[str, Any] = {
            "required_conversation_resolution": {"enabled": rules.required_review_thread_resolution}
        }
        if (
            rules.required_approving_review_count
            or rules.require_code_owner_review
            or rules.require_last_push_approval
            or rules.dismiss_stale_reviews_on_push
        ):
            protection["required_pull_request_reviews"] = {
                "dismiss_stale_reviews": rules.dismiss_stale_reviews_on_push,
                "require_code_owner_reviews": rules.require_code_owner_review,
                "required_approving_review_count": rules.required_approving_review_count,
                "require_last_push_approval": rules.require_last_push_approval,
            }
        self.repo.protection[branch] = protection

    def reviews(self, number: int, reviews: Sequence[tuple[str, str, str, bool]]) -> None:
        self.repo.prs[number]["_reviews"] = [
            {
                "id": next(self.server.state.ids),
                "user": a,
                "state": s,
                "commit_id": c,
                "can_push": p,
                "submitted_at": "2024-01-02T00:00:00Z",
            }
            for a, s, c, p in reviews
        ]

    def review_requests(
        self, number: int, requests: Sequence[tuple[str, bool, bool]], decision: str | None
    ) -> None:
        self.repo.prs[number]["_review_requests"] = [
            {"team" if t else "login": r, "as_code_owner": o} for r, t, o in requests
        ]
        self.repo.prs[number]["_review_decision"] = decision

    def commit_users(self, sha: str, author: str | None, committer: str | None) -> None:
        self.repo.commit_users[sha] = (author, committer)

    def effects(self, name: str) -> int:
        return self.server.state.effects[name]

    def user_lookups(self) -> int:
        return self.server.state.graphql_ops["Viewer"]

    def commit_message(self, sha: str) -> str:
        return self.repo.commits[sha][1]

    def authored(
        self, name: str, parents: Sequence[str], message: str, author: tuple[str, str, str | None]
    ) -> str:
        sha = self.repo.add_commit(name, parents=parents, message=message)
        self.repo.commit_authors[sha] = author
        return sha

    def set_labels(self, number: int, names: Sequence[str]) -> None:
        self.repo.labels[number] = list(names)

    def labels(self, number: int) -> list[str]:
        return list(self.repo.labels.get(number, []))

    def set_files(self, files: dict[str, str]) -> None:
        self.repo.files = dict(files)


@pytest.fixture(params=["fake", pytest.param("gh", marks=pytest.mark.gh)])
def forge(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "fake":
        yield FakeBackend()
        return
    with ForgeServer() as server:
        yield GhBackend(server)


def _main(forge: Backend) -> tuple[str, str]:
    root = forge.commit("root")
    tip = forge.commit("tip", [root])
    forge.branch("main", tip)
    return root, tip


def test_workflow_files_and_text_file_read_the_contents_api(forge: Backend) -> None:
    # repos/get-content: a directory lists its entries (files and subdirectories), a file
    # carries its text in base64; 404 for a path that is not there.
    flow = ".github/workflows"
    forge.set_files(
        {
            f"{flow}/ci.yml": "on: push\n",
            f"{flow}/lint.yaml": "on: [push]  # é\n",
            f"{flow}/README.md": "workflows\n",
            f"{flow}/nested/other.yml": "on: push\n",
        }
    )
    assert forge.port.workflow_files(REPO, "main") == (f"{flow}/ci.yml", f"{flow}/lint.yaml")
    assert forge.port.text_file(REPO, f"{flow}/lint.yaml", "main") == "on: [push]  # é\n"
    assert forge.port.text_file(REPO, f"{flow}/gone.yml", "main") is None
    forge.set_files({})
    assert forge.port.workflow_files(REPO, "main") == ()


def test_get_head_sha_reads_a_branch_and_none_when_missing(forge: Backend) -> None:
    _, tip = _main(forge)
    assert forge.port.get_head_sha(REPO, "main") == tip
    assert forge.port.get_head_sha(REPO, "refs/heads/main") == tip
    assert forge.port.get_head_sha(REPO, "no-such-branch") is None


def test_ensure_branch_twice_creates_once(forge: Backend) -> None:
    _, tip = _main(forge)
    first = forge.port.ensure_branch(REPO, "feature/x", tip)
    second = forge.port.ensure_branch(REPO, "feature/x", tip)
    assert (first.sha, first.done, first.skipped) == (tip, True, None)
    assert (second.sha, second.done, second.skipped) == (tip, False, "exists")
    assert forge.effects("create_ref") == 1
    assert forge.port.get_head_sha(REPO, "feature/x") == tip


def test_open_pr_twice_opens_once(forge: Backend) -> None:
    _root, tip = _main(forge)
    head = forge.commit("work", [tip])
    forge.branch("topic", head)
    first = forge.port.open_pr(REPO, head="topic", base="main", title="Add it", body="Body")
    second = forge.port.open_pr(REPO, head="topic", base="main", title="Add it", body="Body")
    assert first.done
    assert not second.done
    assert second.skipped == "exists"
    assert first.pr.number == second.pr.number
    assert (first.pr.head_sha, first.pr.head_ref, first.pr.base_ref) == (head, "topic", "main")
    assert first.pr.head_repo == REPO
    assert first.pr.title == "Add it"
    assert forge.effects("create_pr") == 1


def test_get_pr_computes_behind_against_the_base(forge: Backend) -> None:
    _, tip = _main(forge)
    head = forge.commit("work", [tip])
    forge.pr(7, "topic", head)
    pr = forge.port.get_pr(REPO, 7)
    assert (pr.number, pr.state, pr.head_sha, pr.behind, pr.merged) == (
        7,
        "open",
        head,
        False,
        False,
    )
    assert pr.mergeable_state == "clean"
    forge.branch("main", forge.commit("later", [tip]))
    moved = forge.port.get_pr(REPO, 7)
    assert moved.behind
    assert moved.behind_by == 1


def test_rerun_job_starts_the_failed_job_again_on_the_same_commit(forge: Backend) -> None:
    tip = forge.commit("rerun")
    forge.runs(tip, [("test", "failure", ACTIONS_APP_ID)])
    (failed,) = forge.port.latest_check_runs(REPO, tip)
    forge.port.rerun_job(REPO, failed.id)
    (latest,) = forge.port.latest_check_runs(REPO, tip)
    assert (latest.name, latest.conclusion, latest.id != failed.id) == ("test", None, True)
    assert forge.effects("rerun_job") == 1


def test_update_ref_fast_forwards_and_marks_the_prs_it_holds_merged(forge: Backend) -> None:
    # GitHub's git/update-ref with force false: 422 unless the new commit holds the tip; a PR
    # into the branch whose head the branch now holds is merged, at the pushed commit.
    root, tip = _main(forge)
    head = forge.commit("work", [root])
    other = forge.commit("other", [root])
    forge.pr(7, "topic", head)
    forge.pr(8, "elsewhere", other)
    car = forge.commit("car", [tip, head])
    with pytest.raises(ForgeCliError) as caught:
        forge.port.wire.update_ref(REPO, "main", head)  # not a fast-forward
    assert caught.value.status == 422
    assert forge.port.get_head_sha(REPO, "main") == tip
    assert forge.port.wire.update_ref(REPO, "main", car) == car
    assert forge.port.get_head_sha(REPO, "main") == car
    merged, untouched = forge.port.get_pr(REPO, 7), forge.port.get_pr(REPO, 8)
    assert (merged.state, merged.merged, merged.merge_sha) == ("closed", True, car)
    assert (untouched.state, untouched.merged) == ("open", False)
    assert forge.effects("update_ref") == 1


def test_delete_ref_deletes_once_and_skips_default_and_fork_heads(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.branch("topic", tip)
    first = forge.port.delete_ref(REPO, branch="topic", head_repo=REPO)
    second = forge.port.delete_ref(REPO, branch="topic", head_repo=REPO)
    assert (first.done, first.skipped) == (True, None)
    assert (second.done, second.skipped) == (False, "missing")
    assert forge.effects("delete_ref") == 1
    assert forge.port.delete_ref(REPO, branch="main", head_repo=REPO).skipped == "default-branch"
    forge.branch("shared", tip)
    fork = forge.port.delete_ref(REPO, branch="shared", head_repo="someone/widgets")
    gone = forge.port.delete_ref(REPO, branch="shared", head_repo=None)
    assert (fork.skipped, gone.skipped) == ("fork-head", "fork-head")
    assert forge.port.get_head_sha(REPO, "shared") == tip
    assert forge.port.get_head_sha(REPO, "main") == tip
    assert forge.effects("delete_ref") == 1


def test_upsert_comment_posts_once_and_resolves_the_user_once(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(3, "topic", tip)
    first = forge.port.upsert_comment(
        REPO, 3, "<!-- bot:status -->", "<!-- bot:status -->\nAll good"
    )
    second = forge.port.upsert_comment(
        REPO, 3, "<!-- bot:status -->", "<!-- bot:status -->\nAll good"
    )
    assert first.done
    assert not second.done
    assert second.skipped == "exists"
    assert second.id == first.id
    assert forge.effects("create_issue_comment") == 1
    assert forge.user_lookups() == 1


def test_ensure_issue_opens_one_labelled_issue_and_upsert_updates_its_comment(
    forge: Backend,
) -> None:
    _, tip = _main(forge)
    forge.pr(1, "topic", tip)
    forge.set_labels(1, ["queue"])
    first = forge.port.ensure_issue(REPO, label="queue", title="Train", body="the train")
    assert first != 1  # issue numbers are shared with PRs
    again = forge.port.ensure_issue(REPO, label="queue", title="Train", body="the train")
    assert (again, forge.effects("create_issue")) == (first, 1)
    assert forge.port.list_labelled_prs(REPO, "queue", state="all")[0].number == 1  # PRs only
    marker = "<!-- summary -->"
    made = forge.port.upsert_comment(REPO, first, marker, f"{marker}\nrunning", update=True)
    same = forge.port.upsert_comment(REPO, first, marker, f"{marker}\nrunning", update=True)
    done = forge.port.upsert_comment(REPO, first, marker, f"{marker}\ndone", update=True)
    assert (made.done, same.done, same.skipped, done.done) == (True, False, "exists", True)
    assert made.id == same.id == done.id
    found = forge.port.find_comment(REPO, first, marker)
    assert found is not None
    assert found.body == f"{marker}\ndone"
    assert (forge.effects("create_issue_comment"), forge.effects("update_issue_comment")) == (1, 1)


def test_upsert_comment_ignores_forged_and_longer_markers(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(3, "topic", tip)
    forge.comment(3, "mallory", "<!-- m -->")
    forge.comment(3, "forge-bot", "note <!-- m --> inline")
    forge.comment(3, "forge-bot", "<!-- m -->x")
    result = forge.port.upsert_comment(REPO, 3, "<!-- m -->", "no marker in this body")
    again = forge.port.upsert_comment(REPO, 3, "<!-- m -->", "no marker in this body")
    assert result.done
    assert again.done
    assert forge.effects("create_issue_comment") == 2


def test_list_pr_files_reads_every_page_and_detects_truncation(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(4, "topic", tip)
    forge.files(4, 250)
    files = forge.port.list_pr_files(REPO, 4)
    assert len(files) == 250
    assert files[0].path == "src/f0.py"
    assert files[-1].path == "src/f249.py"
    forge.files(4, 3000, changed_files=3500)
    with pytest.raises(FileListTruncatedError) as caught:
        forge.port.list_pr_files(REPO, 4)
    assert (caught.value.expected, caught.value.received) == (3500, 3000)


def test_list_pr_commits_reads_the_first_250(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(5, "topic", tip)
    shas = [sha_of(f"c{i}") for i in range(300)]
    forge.pr_commits(5, shas)
    assert forge.port.list_pr_commits(REPO, 5) == tuple(shas[:250])


def test_compare_files_flags_truncation(forge: Backend) -> None:
    _, tip = _main(forge)
    head = forge.commit("work", [tip])
    forge.branch("topic", head)
    forge.compare_files("main", "topic", 2)
    small = forge.port.compare_files(REPO, "main", "topic")
    assert [f.path for f in small.files] == ["f0", "f1"]
    assert not small.truncated
    forge.compare_files("main", "topic", 300)
    assert forge.port.compare_files(REPO, "main", "topic").truncated


def test_compare_ancestry_statuses(forge: Backend) -> None:
    root, tip = _main(forge)
    ahead = forge.commit("ahead", [tip])
    side = forge.commit("side", [root])
    assert forge.port.compare_ancestry(REPO, "main", ahead) == "ahead"
    assert forge.port.compare_ancestry(REPO, "main", root) == "behind"
    assert forge.port.compare_ancestry(REPO, "main", tip) == "identical"
    assert forge.port.compare_ancestry(REPO, "main", side) == "diverged"
    assert forge.port.compare_ancestry(REPO, "main", sha_of("unknown")) == "missing"


def test_commit_parents_reads_a_merge_and_none_for_an_unknown_commit(forge: Backend) -> None:
    root, tip = _main(forge)
    side = forge.commit("side", [root])
    merge = forge.commit("merge", [side, tip])
    assert forge.port.commit_parents(REPO, merge) == (side, tip)
    assert forge.port.commit_parents(REPO, side) == (root,)
    assert forge.port.commit_parents(REPO, sha_of("unknown")) is None


def test_revalidate_open_prs_uses_the_etag(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(1, "a", tip)
    forge.pr(2, "b", tip)
    first = forge.port.revalidate_open_prs(REPO, None)
    assert isinstance(first, OpenPrsList)
    assert first.etag
    assert sorted(p.number for p in first.prs) == [1, 2]
    assert all(p.behind is False for p in first.prs)
    forge.update_pr(1, mergeable_state="dirty")
    assert isinstance(forge.port.revalidate_open_prs(REPO, first.etag), NotModified)
    forge.update_pr(2, title="Renamed")
    changed = forge.port.revalidate_open_prs(REPO, first.etag)
    assert isinstance(changed, OpenPrsList)
    assert changed.etag not in (None, first.etag)
    assert {p.title for p in changed.prs} == {"A change", "Renamed"}


def test_revalidate_open_prs_has_no_etag_past_one_page(forge: Backend) -> None:
    _, tip = _main(forge)
    for n in range(1, 106):
        forge.pr(n, f"b{n}", tip)
    listed = forge.port.revalidate_open_prs(REPO, None)
    assert isinstance(listed, OpenPrsList)
    assert listed.etag is None
    assert len(listed.prs) == 105
    assert len(forge.port.list_open_prs(REPO)) == 105


def test_list_default_branch_commits_reads_all_pages_newest_first(forge: Backend) -> None:
    parent = forge.commit("old", date="2023-12-01T00:00:00Z")
    shas = []
    for i in range(130):
        parent = forge.commit(
            f"c{i}", [parent], date=f"2024-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
        )
        shas.append(parent)
    forge.branch("main", parent)
    commits = forge.port.list_default_branch_commits(REPO, "2024-01-01T00:00:00Z")
    assert [c.sha for c in commits] == shas[::-1]
    assert commits[0].message == "c129"


def test_check_runs_all_and_latest_and_created(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.runs(tip, [("test", "failure", ACTIONS_APP_ID), ("test", "success", ACTIONS_APP_ID)])
    assert [r.conclusion for r in forge.port.check_runs(REPO, tip)] == ["failure", "success"]
    created = forge.port.create_check_run(
        REPO, name="review", head_sha=tip, conclusion="action_required", title="T", summary="S"
    )
    assert created.app_id == forge.app_id
    assert created.conclusion == "action_required"
    latest = {(r.name, r.conclusion, r.app_id) for r in forge.port.latest_check_runs(REPO, tip)}
    assert latest == {("test", "success", ACTIONS_APP_ID), ("review", "action_required", APP_ID)}
    assert forge.effects("create_check_run") == 1
    with pytest.raises(ForgeInputError) as caught:
        forge.port.create_check_run(
            REPO, name="x", head_sha=tip, conclusion="neutral", title="T", summary="S"
        )
    assert caught.value.field == "conclusion"
    assert forge.effects("create_check_run") == 1


def test_commit_statuses(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.statuses(tip, [("ci/legacy", "success"), ("deploy", "pending")])
    assert {(s.context, s.state) for s in forge.port.commit_statuses(REPO, tip)} == {
        ("ci/legacy", "success"),
        ("deploy", "pending"),
    }


def test_commit_statuses_are_the_latest_per_context(forge: Backend) -> None:
    # The combined status answers one status per context, the newest: a failure that a later
    # success replaced is gone, and so is a success that a later failure replaced.
    _, tip = _main(forge)
    forge.statuses(
        tip,
        [
            ("ci/legacy", "failure"),
            ("deploy", "success"),
            ("ci/legacy", "success"),
            ("deploy", "error"),
        ],
    )
    statuses = forge.port.commit_statuses(REPO, tip)
    assert sorted((s.context, s.state) for s in statuses) == [
        ("ci/legacy", "success"),
        ("deploy", "error"),
    ]


def test_pr_list_rows_carry_no_mergeable_state(forge: Backend) -> None:
    # GitHub's list rows (pull-request-simple) have no mergeable_state, merged or changed_files:
    # only get_pr knows them.
    _, tip = _main(forge)
    forge.pr(1, "a", tip, mergeable_state="dirty")
    forge.files(1, 3)
    (row,) = forge.port.list_open_prs(REPO)
    assert (row.mergeable_state, row.merged, row.changed_files) == ("unknown", False, None)
    existing = forge.port.open_pr(REPO, head="a", base="main", title="T", body="")
    assert existing.skipped == "exists"
    assert existing.pr.mergeable_state == "unknown"
    full = forge.port.get_pr(REPO, 1)
    assert (full.mergeable_state, full.changed_files) == ("dirty", 3)


def test_required_checks_and_load_required_contexts(forge: Backend) -> None:
    _main(forge)
    forge.rulesets("main", [("test", ACTIONS_APP_ID), ("lint", None)], True)
    rules = forge.port.required_checks(REPO, "main")
    assert rules.strict
    assert rules.contexts == (
        RequiredContext(context="test", app_id=ACTIONS_APP_ID),
        RequiredContext(context="lint"),
    )
    assert load_required_contexts(forge.port, REPO, "main") == rules
    forge.classic("dev", [("build", 42)])
    assert load_required_contexts(forge.port, REPO, "dev").contexts == (
        RequiredContext(context="build", app_id=42),
    )
    forge.classic("free", 403)
    assert load_required_contexts(forge.port, REPO, "free") == RequiredChecks()
    assert load_required_contexts(forge.port, REPO, "unprotected") == RequiredChecks()


def test_review_comments_and_force_pushes(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(9, "topic", tip)
    forge.review_threads(
        9, [(True, [(1, "ann", "fixed?")]), (False, [(2, "bob", "nit"), (3, "ann", "ok")])]
    )
    comments = forge.port.list_review_comments(REPO, 9)
    assert [(c.id, c.author, c.resolved) for c in comments] == [
        (1, "ann", True),
        (2, "bob", False),
        (3, "ann", False),
    ]
    assert comments[0].author_association == "MEMBER"
    assert comments[0].path == "a.py"
    forge.force_pushes(9, [(None, sha_of("a")), (sha_of("a"), sha_of("b"))])
    assert forge.port.list_force_pushes(REPO, 9) == (
        ForcePush(before=None, after=sha_of("a")),
        ForcePush(before=sha_of("a"), after=sha_of("b")),
    )
    forge.force_pushes(9, [(sha_of(f"x{i}"), sha_of(f"y{i}")) for i in range(101)])
    with pytest.raises(ForcePushesTruncated):
        forge.port.list_force_pushes(REPO, 9)


def test_missing_pr_is_a_cli_error_with_status(forge: Backend) -> None:
    _main(forge)
    with pytest.raises(ForgeCliError) as caught:
        forge.port.get_pr(REPO, 404)
    assert caught.value.status == 404


# -- guarded merge and update-branch ---------------------------------------------------------------


class _HeadMovesAfterRead:
    """A wire whose PR head moves right after the port's first get_pr: the race a read can't see."""

    def __init__(self, forge: Backend, number: int, new_head: str) -> None:
        self._inner = forge.port.wire
        self._forge, self._number, self._new_head = forge, number, new_head
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get_pr(self, repo: str, number: int) -> PullRequest:
        pr = self._inner.get_pr(repo, number)
        if self._new_head:
            self._forge.update_pr(self._number, head_sha=self._new_head)
            self._new_head = ""
        return pr

    def merge_pr(self, repo: str, number: int, **kwargs: Any) -> str:
        self.writes += 1
        return self._inner.merge_pr(repo, number, **kwargs)

    def update_branch(self, repo: str, number: int, **kwargs: Any) -> None:
        self.writes += 1
        self._inner.update_branch(repo, number, **kwargs)


def _open_pr(forge: Backend, *, behind: bool = False) -> tuple[str, str]:
    """Return (head, base tip) of PR #7 from `topic`; `behind` moves main past its fork point."""
    _, tip = _main(forge)
    head = forge.commit("work", [tip])
    forge.pr(7, "topic", head)
    if behind:
        tip = forge.commit("later", [tip])
        forge.branch("main", tip)
    return head, tip


def test_merge_pr_merges_once_with_the_message_and_skips_a_merged_pr(forge: Backend) -> None:
    head, _tip = _open_pr(forge)
    first = forge.port.merge_pr(
        REPO, 7, head_sha=head, method="squash", subject="Add it (#7)", body="Why it matters."
    )
    second = forge.port.merge_pr(
        REPO, 7, head_sha=head, method="squash", subject="Add it (#7)", body="Why it matters."
    )
    assert (first.done, first.skipped) == (True, None)
    assert first.sha is not None
    assert (second.done, second.skipped, second.sha) == (False, "merged", first.sha)
    assert forge.effects("merge_pr") == 1
    assert forge.port.get_head_sha(REPO, "main") == first.sha
    assert forge.commit_message(first.sha) == "Add it (#7)\n\nWhy it matters."
    merged = forge.port.get_pr(REPO, 7)
    assert (merged.merged, merged.merge_sha) == (True, first.sha)


def test_merge_pr_refuses_a_head_that_moved_before_the_call(forge: Backend) -> None:
    head, tip = _open_pr(forge)
    forge.update_pr(7, head_sha=forge.commit("pushed", [head]))
    with pytest.raises(ForgeConflictError, match="#7: the head is"):
        forge.port.merge_pr(REPO, 7, head_sha=head, method="merge", subject="S", body="")
    assert forge.effects("merge_pr") == 0
    assert forge.port.get_head_sha(REPO, "main") == tip


def test_merge_pr_maps_the_forges_409_for_a_head_that_moved_in_between(forge: Backend) -> None:
    head, tip = _open_pr(forge)
    racing = _HeadMovesAfterRead(forge, 7, forge.commit("pushed", [head]))
    port = forge_port(cast(ForgeWire, racing))
    with pytest.raises(ForgeConflictError, match="the head moved"):
        port.merge_pr(REPO, 7, head_sha=head, method="squash", subject="S", body="")
    assert racing.writes == 1  # the guarded write reached the forge, which refused it
    assert forge.effects("merge_pr") == 0
    assert forge.port.get_head_sha(REPO, "main") == tip
    assert not forge.port.get_pr(REPO, 7).merged


def test_merge_pr_refuses_a_closed_pr_and_bad_arguments(forge: Backend) -> None:
    head, _tip = _open_pr(forge)
    with pytest.raises(ForgeInputError, match="method"):
        forge.port.merge_pr(REPO, 7, head_sha=head, method="fast-forward", subject="S", body="")
    with pytest.raises(ForgeInputError, match="head_sha"):
        forge.port.merge_pr(REPO, 7, head_sha="abc", method="merge", subject="S", body="")
    with pytest.raises(ForgeInputError, match="subject"):
        forge.port.merge_pr(REPO, 7, head_sha=head, method="merge", subject="", body="")
    forge.update_pr(7, state="closed")
    with pytest.raises(ForgeConflictError, match="closed"):
        forge.port.merge_pr(REPO, 7, head_sha=head, method="merge", subject="S", body="")
    assert forge.effects("merge_pr") == 0


def test_merge_pr_passes_the_forges_refusal_of_a_conflicted_pr_through(forge: Backend) -> None:
    head, _tip = _open_pr(forge)
    forge.update_pr(7, mergeable_state="dirty")
    with pytest.raises(ForgeCliError) as caught:
        forge.port.merge_pr(REPO, 7, head_sha=head, method="merge", subject="S", body="")
    assert caught.value.status == 405
    assert forge.effects("merge_pr") == 0


def test_update_branch_updates_once_then_skips_up_to_date(forge: Backend) -> None:
    head, tip = _open_pr(forge, behind=True)
    first = forge.port.update_branch(REPO, 7, head_sha=head)
    assert (first.done, first.skipped) == (True, None)
    # GitHub answers 202 and writes the new head later (the honest forge a few requests later).
    for _ in range(10):
        updated = forge.port.get_pr(REPO, 7)
        if updated.head_sha != head:
            break
    assert updated.head_sha != head
    assert not updated.behind
    assert forge.port.get_head_sha(REPO, "topic") == updated.head_sha
    # A rerun with the old head is a moved head; with the new one there is nothing to do.
    with pytest.raises(ForgeConflictError):
        forge.port.update_branch(REPO, 7, head_sha=head)
    again = forge.port.update_branch(REPO, 7, head_sha=updated.head_sha)
    assert (again.done, again.skipped) == (False, "up-to-date")
    assert forge.effects("update_branch") == 1
    assert forge.port.compare_ancestry(REPO, tip, updated.head_sha) == "ahead"


def test_update_branch_maps_the_forges_422_for_a_head_that_moved_in_between(
    forge: Backend,
) -> None:
    head, _tip = _open_pr(forge, behind=True)
    racing = _HeadMovesAfterRead(forge, 7, forge.commit("pushed", [head]))
    port = forge_port(cast(ForgeWire, racing))
    with pytest.raises(ForgeConflictError, match="the head moved"):
        port.update_branch(REPO, 7, head_sha=head)
    assert racing.writes == 1
    assert forge.effects("update_branch") == 0


def test_update_branch_skips_a_merged_pr_and_one_not_behind(forge: Backend) -> None:
    head, _tip = _open_pr(forge)
    assert forge.port.update_branch(REPO, 7, head_sha=head).skipped == "up-to-date"
    forge.port.merge_pr(REPO, 7, head_sha=head, method="merge", subject="S", body="")
    assert forge.port.update_branch(REPO, 7, head_sha=head).skipped == "merged"
    assert forge.effects("update_branch") == 0


# -- review state and review rules -------------------------------------------------------------------


def test_load_review_rules_rulesets_first_then_classic(forge: Backend) -> None:
    _main(forge)
    forge.rulesets("main", [("test", None)], False)
    forge.review_rule("main", required_approving_review_count=1, dismiss_stale_reviews_on_push=True)
    forge.review_rule("main", required_approving_review_count=2, require_code_owner_review=True)
    assert load_review_rules(forge.port, REPO, "main") == ReviewRules(
        required_approving_review_count=2,
        require_code_owner_review=True,
        dismiss_stale_reviews_on_push=True,
        source="ruleset",
    )
    # The rules load_branch_rules read carry the review rule: nothing is read twice.
    branch = load_branch_rules(forge.port, REPO, "main")
    assert load_review_rules(forge.port, REPO, "main", branch).required_approving_review_count == 2
    classic = ReviewRules(
        required_approving_review_count=1,
        require_last_push_approval=True,
        required_review_thread_resolution=True,
        source="classic",
    )
    forge.classic("dev", [("build", None)])
    forge.classic_reviews("dev", classic)
    assert load_review_rules(forge.port, REPO, "dev") == classic
    # Classic checks found, rulesets' review rule kept beside them.
    forge.classic("mixed", [("build", None)])
    forge.review_rule("mixed", required_review_thread_resolution=True)
    mixed = load_required_contexts(forge.port, REPO, "mixed")
    assert [c.context for c in mixed.contexts] == ["build"]
    assert mixed.reviews is not None
    assert mixed.reviews.required_review_thread_resolution
    forge.classic("free", 403)
    assert load_review_rules(forge.port, REPO, "free") == ReviewRules()
    assert load_review_rules(forge.port, REPO, "unprotected") == ReviewRules()


def test_rulesets_and_classic_protection_are_layered(forge: Backend) -> None:
    # GitHub enforces both: every context, strict if either is, each review parameter strictest.
    _main(forge)
    forge.rulesets("main", [("test", ACTIONS_APP_ID)], False)
    forge.review_rule("main", required_approving_review_count=1, require_last_push_approval=True)
    forge.classic("main", [("build", None)])
    forge.classic_reviews(
        "main",
        ReviewRules(
            required_approving_review_count=2,
            dismiss_stale_reviews_on_push=True,
            required_review_thread_resolution=True,
            source="classic",
        ),
    )
    checks = load_required_contexts(forge.port, REPO, "main")
    assert {c.context for c in checks.contexts} == {"test", "build"}
    assert load_review_rules(forge.port, REPO, "main") == ReviewRules(
        required_approving_review_count=2,
        require_last_push_approval=True,
        dismiss_stale_reviews_on_push=True,
        required_review_thread_resolution=True,
        source="ruleset and classic",
    )


def test_githubs_two_404s_on_protection_are_told_apart(forge: Backend) -> None:
    _main(forge)
    forge.rulesets("main", [("test", None)], False)
    forge.review_rule("main", required_approving_review_count=1)
    # 404 `Branch not protected`: nothing more is asked.
    rules = load_branch_rules(forge.port, REPO, "main")
    assert (rules.classic_status, rules.hidden) == ("unprotected", False)
    assert [c.context for c in rules.required_checks().contexts] == ["test"]
    # 404 `Not Found` (a caller without admin rights): hidden, never "not protected".
    forge.hide_protection()
    with pytest.raises(ProtectionHidden) as caught:
        load_required_contexts(forge.port, REPO, "main")
    assert "cannot read branch protection" in str(caught.value)
    assert "admin" in str(caught.value)
    rules = load_branch_rules(forge.port, REPO, "main")
    assert rules.classic_status == "hidden"
    with pytest.raises(ProtectionHidden):
        rules.required_checks()
    # The review part keeps the rulesets' rule and says the rest is unknown.
    assert load_review_rules(forge.port, REPO, "main") == ReviewRules(
        required_approving_review_count=1, source="ruleset", protection_hidden=True
    )


def test_review_state_reads_every_page_at_the_head(forge: Backend) -> None:
    _, tip = _main(forge)
    head = forge.commit("head", [tip])
    forge.pr(9, "topic", head)
    forge.commit_users(head, "ann", "bob")
    # 150 reviews: two pages; the last one decides each reviewer's verdict.
    rows = [(f"r{i}", "COMMENTED", tip, False) for i in range(148)]
    rows += [("cy", "APPROVED", head, True), ("dee", "CHANGES_REQUESTED", tip, True)]
    forge.reviews(9, rows)
    forge.review_requests(9, [("eve", False, False), ("acme/core", True, True)], "REVIEW_REQUIRED")
    forge.review_threads(
        9,
        [(True, [(1, "ann", "fixed?")])]
        + [(False, [(100 + t, "bob", "nit")]) for t in range(100)]
        + [(False, [(1000 + c, "cy", f"c{c}") for c in range(101)])],
    )
    state = forge.port.review_state(REPO, 9, head)
    assert state.head_sha == head
    assert len(state.reviews) == 150
    assert state.reviews[-2:] == (
        Review(
            author="cy",
            state="APPROVED",
            commit_oid=head,
            author_can_push=True,
            submitted_at=state.reviews[-2].submitted_at,
        ),
        Review(
            author="dee",
            state="CHANGES_REQUESTED",
            commit_oid=tip,
            author_can_push=True,
            submitted_at=state.reviews[-1].submitted_at,
        ),
    )
    assert state.requests == (
        ReviewRequest(reviewer="eve"),
        ReviewRequest(reviewer="acme/core", team=True, as_code_owner=True),
    )
    assert state.decision == "REVIEW_REQUIRED"
    assert state.pushers == ("ann", "bob")
    assert len(state.threads) == 102
    assert [t.resolved for t in state.threads[:2]] == [True, False]
    assert state.threads[-1] == ReviewThread(
        id=state.threads[-1].id, resolved=False, path="a.py", line=1, author="cy", comments=101
    )
    assert state.rules == ReviewRules()


def test_review_state_refuses_a_moved_head_and_too_many_requests(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(9, "topic", tip)
    with pytest.raises(ForgeConflictError):
        forge.port.review_state(REPO, 9, sha_of("elsewhere"))
    forge.review_requests(9, [(f"u{i}", False, False) for i in range(101)], None)
    with pytest.raises(ForgeCliError) as caught:
        forge.port.review_state(REPO, 9, tip)
    assert caught.value.kind == "malformed"


def test_readiness_over_the_review_state_names_each_rule(forge: Backend) -> None:
    _, tip = _main(forge)
    head = forge.commit("head", [tip])
    forge.pr(9, "topic", head)
    forge.commit_users(head, "ann", "ann")
    forge.rulesets("main", [("test", None)], False)
    forge.review_rule(
        "main",
        required_approving_review_count=2,
        require_code_owner_review=True,
        require_last_push_approval=True,
        dismiss_stale_reviews_on_push=True,
        required_review_thread_resolution=True,
    )
    forge.reviews(
        9,
        [
            ("bob", "APPROVED", tip, True),
            ("cy", "CHANGES_REQUESTED", head, True),
            ("ann", "APPROVED", head, True),
        ],
    )
    forge.review_requests(
        9, [("acme/core", True, True), ("eve", False, False)], "CHANGES_REQUESTED"
    )
    forge.review_threads(9, [(False, [(1, "bob", "why?")])])
    pr = forge.port.get_pr(REPO, 9)
    branch = load_branch_rules(forge.port, REPO, "main")
    checks = branch.required_checks()
    state = load_review_state(forge.port, REPO, pr, branch)
    result = merge_readiness(
        pr=pr,
        rules=checks,
        runs=[
            CheckRun(
                id=1,
                name="test",
                status="completed",
                conclusion="success",
                app_id=ACTIONS_APP_ID,
                head_sha=head,
            )
        ],
        required_apps=(ACTIONS_APP_ID,),
        approved_head=head,
        reviews=state,
    )
    assert [(b.reason, b.actor) for b in result.blockers] == [
        ("changes-requested", "author"),
        ("approvals-missing", "reviewer"),
        ("code-owner-review-missing", "reviewer"),
        ("last-push-unapproved", "reviewer"),
        ("review-requested", "reviewer"),
        ("threads-unresolved", "author"),
    ]
    forge.reviews(
        9,
        [
            ("bob", "APPROVED", head, True),
            ("cy", "APPROVED", head, True),
        ],
    )
    forge.review_requests(9, [], "APPROVED")
    forge.review_threads(9, [(True, [(1, "bob", "why?")])])
    state = load_review_state(forge.port, REPO, pr, branch)
    result = merge_readiness(
        pr=pr,
        rules=checks,
        runs=[],
        required_apps=(ACTIONS_APP_ID,),
        approved_head=head,
        reviews=state,
    )
    assert [b.reason for b in result.blockers] == ["check-pending"]


# -- what forge-cli merge and train read and write ---------------------------------------------------


def test_list_pr_commit_messages_splits_messages_and_names_authors(forge: Backend) -> None:
    _, tip = _main(forge)
    first = forge.authored(
        "c1", [tip], "Add retry\n\nWraps the call\nin a loop.\n", ("Alice", "a@x.org", "alice")
    )
    merge = forge.authored("c2", [first, tip], "Merge branch 'main' into topic", ("B", "b@x", None))
    forge.pr(7, "topic", merge)
    forge.pr_commits(7, [first, merge])
    commits = forge.port.list_pr_commit_messages(REPO, 7)
    assert [(c.sha, c.subject, c.body) for c in commits] == [
        (first, "Add retry", "Wraps the call\nin a loop."),
        (merge, "Merge branch 'main' into topic", ""),
    ]
    assert [(c.author_name, c.author_email, c.author_login) for c in commits] == [
        ("Alice", "a@x.org", "alice"),
        ("B", "b@x", None),
    ]
    assert [c.parents for c in commits] == [(tip,), (first, tip)]


def test_list_labelled_prs_lists_prs_oldest_first_by_state(forge: Backend) -> None:
    _, tip = _main(forge)
    for number in (3, 1, 2, 4):
        forge.pr(number, f"topic{number}", forge.commit(f"w{number}", [tip]))
    forge.set_labels(1, ["merge-train"])
    forge.set_labels(2, ["other", "Merge-Train"])
    forge.set_labels(3, ["merge-train"])
    forge.update_pr(3, state="closed")
    assert [p.number for p in forge.port.list_labelled_prs(REPO, "merge-train")] == [1, 2]
    every = forge.port.list_labelled_prs(REPO, "merge-train", state="all")
    assert [(p.number, p.state) for p in every] == [(1, "open"), (2, "open"), (3, "closed")]
    assert forge.port.list_labelled_prs(REPO, "nothing") == ()
    for bad in ("a,b", "", "..", "x\n"):
        with pytest.raises(ForgeInputError, match="label"):
            forge.port.list_labelled_prs(REPO, bad)
    with pytest.raises(ForgeInputError, match="state"):
        forge.port.list_labelled_prs(REPO, "merge-train", state="merged")


def test_remove_label_removes_once(forge: Backend) -> None:
    _, tip = _main(forge)
    forge.pr(5, "topic", forge.commit("w", [tip]))
    forge.set_labels(5, ["keep", "merge/train"])
    first = forge.port.remove_label(REPO, 5, "Merge/Train")
    second = forge.port.remove_label(REPO, 5, "merge/train")
    assert (first.done, first.skipped) == (True, None)
    assert (second.done, second.skipped) == (False, "missing")
    assert forge.labels(5) == ["keep"]
    assert forge.effects("remove_label") == 1
