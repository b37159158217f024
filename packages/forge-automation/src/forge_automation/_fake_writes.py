"""The fake forge's writes: refs, PRs, labels, comments, check runs, merges, branch updates.

`FakeWire` (`_fake_wire`) adds the reads. GitHub's answers the port relies on are kept: 404s,
405/409 on a merge, 422 on an update-branch at a moved head.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace

from ._errors import ForgeCliError
from ._fake_state import FakeState, not_found
from ._types import CheckRun, CheckRunRequest, CreatedCheckRun, LabelledIssue, PullRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._fake import FakeForge

__all__ = ["FakeWrites"]


def _fake_sha(text: str) -> str:
    """Return a stable 40-hex object id for a commit the fake writes."""
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class FakeWrites:
    """The fake wire's writes (and its call counter); `FakeWire` adds the reads."""

    def __init__(self, fake: FakeForge) -> None:
        self._f = fake

    def _call(self, name: str) -> FakeState:
        self._f.calls[name] += 1
        return self._f._state

    def create_ref(self, repo: str, branch: str, sha: str) -> str:
        with self._f._lock:
            state = self._call("create_ref")
            if (repo, branch) in state.branches:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Reference already exists", status=422, kind="http"
                )
            state.branches[(repo, branch)] = sha
            state.default_branch.setdefault(repo, branch)
            self._f.effects["create_ref"] += 1
            return sha

    def delete_ref(self, repo: str, branch: str) -> None:
        with self._f._lock:
            state = self._call("delete_ref")
            if state.branches.pop((repo, branch), None) is None:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Reference does not exist", status=422, kind="http"
                )
            self._f.effects["delete_ref"] += 1

    def update_ref(self, repo: str, branch: str, sha: str) -> str:
        with self._f._lock:
            state = self._call("update_ref")
            tip = state.branches.get((repo, branch))
            if tip is None:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Reference does not exist", status=422, kind="http"
                )
            reach = self._f._ancestors(sha)
            if tip not in reach:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Update is not a fast forward",
                    status=422,
                    kind="http",
                )
            state.branches[(repo, branch)] = sha
            # As GitHub does: each open PR into the branch whose head the branch now holds is
            # merged, its merge commit the pushed commit.
            for key, pr in list(state.prs.items()):
                if (key[0], pr.state, pr.base_ref) == (repo, "open", branch) and (
                    pr.head_sha in reach
                ):
                    state.prs[key] = _merged(pr, sha)
            self._f.effects["update_ref"] += 1
            return sha

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        with self._f._lock:
            state = self._call("create_pr")
            owner, sep, branch = head.partition(":")
            head_repo = f"{owner}/{repo.split('/', 1)[1]}" if sep else repo
            branch = branch if sep else head
            head_sha = state.branches.get((head_repo, branch))
            if head_sha is None or (repo, base) not in state.branches:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: Validation Failed", status=422, kind="http"
                )
            number = max((n for (r, n) in state.prs if r == repo), default=0) + 1
            pr = PullRequest(
                number=number,
                state="open",
                head_sha=head_sha,
                head_ref=branch,
                head_repo=head_repo,
                base_ref=base,
                base_sha=state.branches[(repo, base)],
                title=title,
                body=body,
                author=self._f.user,
            )
            self._f.effects["create_pr"] += 1
            return self._f.add_pr(repo, pr)

    def remove_issue_label(self, repo: str, number: int, label: str) -> bool:
        with self._f._lock:
            state = self._call("remove_issue_label")
            labels = state.labels.get((repo, number), [])
            kept = [x for x in labels if x.casefold() != label.casefold()]
            if len(kept) == len(labels):
                return False
            state.labels[(repo, number)] = kept
            self._f.effects["remove_label"] += 1
            return True

    def create_issue_comment(self, repo: str, number: int, body: str) -> int:
        with self._f._lock:
            state = self._call("create_issue_comment")
            if (repo, number) not in state.prs and (repo, number) not in state.issues:
                raise not_found(f"{repo}#{number}")
            self._f.effects["create_issue_comment"] += 1
            return self._f.add_comment(repo, number, author=self._f.user, body=body)

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> None:
        with self._f._lock:
            state = self._call("update_issue_comment")
            for (where, _), comments in state.comments.items():
                for index, comment in enumerate(comments):
                    if where == repo and comment.id == comment_id:
                        comments[index] = replace(comment, body=body)
                        self._f.effects["update_issue_comment"] += 1
                        return
            raise not_found(f"comment {comment_id}")

    def create_issue(self, repo: str, title: str, body: str, label: str) -> int:
        with self._f._lock:
            state = self._call("create_issue")
            taken = [n for r, n in (*state.prs, *state.issues) if r == repo]
            number = max(taken, default=0) + 1
            state.issues[(repo, number)] = LabelledIssue(
                number=number, author=self._f.user, title=title
            )
            state.labels[(repo, number)] = [label]
            self._f.effects["create_issue"] += 1
            return number

    def create_check_run(self, repo: str, request: CheckRunRequest) -> CheckRun:
        with self._f._lock:
            state = self._call("create_check_run")
            run = CheckRun(
                id=next(self._f._ids),
                name=request.name,
                status="completed",
                conclusion=request.conclusion,
                app_id=self._f.app_id,
                head_sha=request.head_sha,
                completed_at="2024-01-01T00:00:00Z",
                external_id=request.external_id,
            )
            state.runs.setdefault(request.head_sha, []).append(run)
            self._f.created_check_runs.append(
                CreatedCheckRun(id=run.id, repo=repo, request=request, app_id=self._f.app_id)
            )
            self._f.effects["create_check_run"] += 1
            return run

    def rerun_job(self, repo: str, job_id: int) -> None:
        with self._f._lock:
            state = self._call("rerun_job")
            old = next((r for runs in state.runs.values() for r in runs if r.id == job_id), None)
            if old is None:
                raise not_found(f"job {job_id}")
            # A rerun is a new run of the same job on the same commit, queued until CI ends it.
            new = replace(old, id=next(self._f._ids), status="queued", conclusion=None)
            state.runs[old.head_sha].append(new)
            self._f.effects["rerun_job"] += 1

    def merge_pr(
        self, repo: str, number: int, *, sha: str, method: str, subject: str, body: str
    ) -> str:
        with self._f._lock:
            state = self._call("merge_pr")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise not_found(f"{repo}#{number}")
            not_mergeable = ForgeCliError(
                "gh api failed with HTTP 405: Pull Request is not mergeable",
                status=405,
                kind="http",
            )
            if pr.state != "open" or pr.merged:
                raise not_mergeable
            if pr.head_sha != sha:
                raise ForgeCliError(
                    "gh api failed with HTTP 409: Head branch was modified. Review and try the "
                    "merge again.",
                    status=409,
                    kind="http",
                )
            if pr.draft or pr.mergeable_state == "dirty":
                raise not_mergeable
            base_tip = state.branches.get((repo, pr.base_ref)) or pr.base_sha or ""
            parents = (base_tip, pr.head_sha) if method == "merge" else (base_tip,)
            message = subject if method == "rebase" else f"{subject}\n\n{body}".rstrip()
            merged_sha = _fake_sha(f"{method}:{repo}#{number}:{sha}")
            self._f.add_commit(merged_sha, parents=parents, message=message)
            state.branches[(repo, pr.base_ref)] = merged_sha
            state.prs[(repo, number)] = _merged(pr, merged_sha)
            self._f.effects["merge_pr"] += 1
            return merged_sha

    def update_branch(self, repo: str, number: int, *, expected_head_sha: str) -> None:
        with self._f._lock:
            state = self._call("update_branch")
            pr = state.prs.get((repo, number))
            if pr is None:
                raise not_found(f"{repo}#{number}")
            if pr.head_sha != expected_head_sha:
                raise ForgeCliError(
                    "gh api failed with HTTP 422: expected head sha didn't match current head ref.",
                    status=422,
                    kind="http",
                )
            if pr.state != "open" or pr.mergeable_state == "dirty":
                raise ForgeCliError(
                    "gh api failed with HTTP 422: merge conflict between base and head",
                    status=422,
                    kind="http",
                )
            base_tip = state.branches.get((repo, pr.base_ref)) or pr.base_sha or ""
            new_head = _fake_sha(f"update:{repo}#{number}:{pr.head_sha}")
            self._f.add_commit(
                new_head,
                parents=(pr.head_sha, base_tip),
                message=f"Merge branch '{pr.base_ref}' into {pr.head_ref}",
            )
            if pr.head_repo == repo:
                state.branches[(repo, pr.head_ref)] = new_head
            state.prs[(repo, number)] = replace(pr, head_sha=new_head, base_sha=base_tip)
            self._f.effects["update_branch"] += 1


def _merged(pr: PullRequest, merge_sha: str) -> PullRequest:
    """The PR closed as merged at `merge_sha` (by a merge, or a push that holds its head)."""
    return replace(
        pr, state="closed", merged=True, merge_sha=merge_sha, merged_at="2024-01-03T00:00:00Z"
    )
