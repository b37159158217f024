"""Every REST request the package sends, built pure: method, path, query, body and headers.

One builder per GitHub operation (named after its OpenAPI `operationId`), each path piece quoted
so that `#`, `?`, braces (gh placeholders) and non-ASCII cannot escape it. `ok` names the
statuses besides 2xx that the operation's reader answers itself (a 404 that means "none", a 304
that means "not modified"); any other status is a failure (`_github.failures`).
tests/test_gh_matrix.py checks every request the package makes against GitHub's OpenAPI
description (@octokit/openapi).

Imports only `dataclasses`, `urllib.parse` and `headers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlencode

from .headers import API_VERSION, JSON_ACCEPT, rest_headers

__all__ = [
    "API_VERSION",
    "JSON_ACCEPT",
    "PER_PAGE",
    "RestRequest",
    "add_issue_comment",
    "check_run",
    "check_run_annotations",
    "combined_status",
    "compare",
    "create_check_run",
    "create_issue",
    "create_pull",
    "create_ref",
    "delete_ref",
    "get_branch_protection",
    "get_branch_rules",
    "get_commit",
    "get_content",
    "get_pull",
    "get_ref",
    "get_repository",
    "job_logs",
    "list_check_runs",
    "list_commits",
    "list_issue_comments",
    "list_issue_labels",
    "list_labelled_issues",
    "list_pull_commits",
    "list_pull_files",
    "list_pulls",
    "merge_pull",
    "remove_issue_label",
    "rerun_job",
    "update_issue_comment",
    "update_pull_branch",
    "update_ref",
    "workflow_runs",
]

# Rows per page of every listing (GitHub's maximum).
PER_PAGE = 100

_NONE: frozenset[int] = frozenset()
_404 = frozenset({404})


@dataclass(frozen=True, slots=True, kw_only=True)
class RestRequest:
    """One REST request: `path` carries its query; `headers` go beside Accept and the version."""

    method: str
    path: str
    body: object = None
    accept: str = JSON_ACCEPT
    headers: tuple[tuple[str, str], ...] = ()
    ok: frozenset[int] = _NONE

    @property
    def read(self) -> bool:
        """Return whether the request only reads (the only kind ever made again)."""
        return self.method == "GET"

    def all_headers(self) -> list[tuple[str, str]]:
        """Return every header the request carries: Accept, the API version, then `headers`."""
        return rest_headers(self.accept, self.headers)


def _seg(value: str) -> str:
    return quote(value, safe="/")


def _repo(repo: str) -> str:
    return "repos/" + _seg(repo)


def _get(
    path: str,
    query: dict[str, object] | None = None,
    *,
    accept: str = JSON_ACCEPT,
    headers: tuple[tuple[str, str], ...] = (),
    ok: frozenset[int] = _NONE,
) -> RestRequest:
    if query:
        path = f"{path}?{urlencode(query)}"
    return RestRequest(method="GET", path=path, accept=accept, headers=headers, ok=ok)


def _page(page: int) -> dict[str, object]:
    return {"per_page": PER_PAGE, "page": page}


def get_repository(repo: str) -> RestRequest:
    """Return `GET /repos/{owner}/{repo}` (repos/get)."""
    return _get(_repo(repo))


def get_ref(repo: str, ref: str) -> RestRequest:
    """Return `GET .../git/ref/{ref}` (git/get-ref); 404 is "no such ref"."""
    return _get(f"{_repo(repo)}/git/ref/{_seg(ref)}", ok=_404)


def create_ref(repo: str, branch: str, sha: str) -> RestRequest:
    """Return `POST .../git/refs` creating `refs/heads/<branch>` at `sha` (git/create-ref)."""
    body = {"ref": f"refs/heads/{branch}", "sha": sha}
    return RestRequest(method="POST", path=f"{_repo(repo)}/git/refs", body=body)


def delete_ref(repo: str, branch: str) -> RestRequest:
    """Return `DELETE .../git/refs/heads/{branch}` (git/delete-ref)."""
    return RestRequest(method="DELETE", path=f"{_repo(repo)}/git/refs/heads/{_seg(branch)}")


def update_ref(repo: str, branch: str, sha: str) -> RestRequest:
    """Return `PATCH .../git/refs/heads/{branch}` moving it to `sha`, never forced (git/update-ref):
    GitHub answers 422 unless `sha` holds the branch's tip (a fast-forward)."""
    body = {"sha": sha, "force": False}
    path = f"{_repo(repo)}/git/refs/heads/{_seg(branch)}"
    return RestRequest(method="PATCH", path=path, body=body)


def get_commit(repo: str, sha: str) -> RestRequest:
    """Return `GET .../git/commits/{sha}` (git/get-commit); 404 is "no such commit"."""
    return _get(f"{_repo(repo)}/git/commits/{_seg(sha)}", ok=_404)


def get_content(repo: str, path: str, ref: str) -> RestRequest:
    """Return `GET .../contents/{path}?ref=` (repos/get-content); 404 is "no such path"."""
    return _get(f"{_repo(repo)}/contents/{_seg(path)}", {"ref": ref}, ok=_404)


def list_pulls(
    repo: str,
    *,
    page: int = 1,
    head: str | None = None,
    base: str | None = None,
    per_page: int = PER_PAGE,
    etag: str | None = None,
) -> RestRequest:
    """Return `GET .../pulls?state=open` (pulls/list), revalidated with `etag` when given."""
    query: dict[str, object] = {"state": "open"}
    if head is not None:
        query["head"] = head
    if base is not None:
        query["base"] = base
    query["per_page"] = per_page
    if head is None:
        query["page"] = page
    if etag:
        return _get(
            f"{_repo(repo)}/pulls", query, headers=(("If-None-Match", etag),), ok=frozenset({304})
        )
    return _get(f"{_repo(repo)}/pulls", query, ok=frozenset({304}) if head is None else _NONE)


def create_pull(repo: str, *, head: str, base: str, title: str, body: str) -> RestRequest:
    """Return `POST .../pulls` (pulls/create)."""
    payload = {"head": head, "base": base, "title": title, "body": body}
    return RestRequest(method="POST", path=f"{_repo(repo)}/pulls", body=payload)


def get_pull(repo: str, number: int) -> RestRequest:
    """Return `GET .../pulls/{number}` (pulls/get)."""
    return _get(f"{_repo(repo)}/pulls/{number}")


def list_pull_files(repo: str, number: int, page: int) -> RestRequest:
    """Return one page of `GET .../pulls/{number}/files` (pulls/list-files)."""
    return _get(f"{_repo(repo)}/pulls/{number}/files", _page(page))


def list_pull_commits(repo: str, number: int, page: int) -> RestRequest:
    """Return one page of `GET .../pulls/{number}/commits` (pulls/list-commits)."""
    return _get(f"{_repo(repo)}/pulls/{number}/commits", _page(page))


def merge_pull(
    repo: str, number: int, *, sha: str, method: str, subject: str, body: str
) -> RestRequest:
    """Return `PUT .../pulls/{number}/merge` while the head is `sha` (pulls/merge)."""
    payload: dict[str, str] = {"sha": sha, "merge_method": method}
    if method != "rebase":  # a rebase writes no commit of its own to title
        payload["commit_title"] = subject
        payload["commit_message"] = body
    return RestRequest(method="PUT", path=f"{_repo(repo)}/pulls/{number}/merge", body=payload)


def update_pull_branch(repo: str, number: int, *, expected_head_sha: str) -> RestRequest:
    """Return `PUT .../pulls/{number}/update-branch` (pulls/update-branch)."""
    return RestRequest(
        method="PUT",
        path=f"{_repo(repo)}/pulls/{number}/update-branch",
        body={"expected_head_sha": expected_head_sha},
    )


def compare(repo: str, base: str, head: str, *, one: bool) -> RestRequest:
    """Return `GET .../compare/{base}...{head}` (repos/compare-commits-with-basehead).

    `one` reads one commit (the ancestry counts only; 404 is "no such ref"), else the whole
    comparison with its files.
    """
    path = f"{_repo(repo)}/compare/{_seg(base)}...{_seg(head)}"
    return _get(path, {"per_page": 1}, ok=_404) if one else _get(path)


def list_labelled_issues(repo: str, label: str, state: str, page: int) -> RestRequest:
    """Return one page of `GET .../issues` carrying `label`, oldest first (issues/list-for-repo)."""
    query: dict[str, object] = {
        "labels": label,
        "state": state,
        "sort": "created",
        "direction": "asc",
        **_page(page),
    }
    return _get(f"{_repo(repo)}/issues", query)


def list_issue_labels(repo: str, number: int) -> RestRequest:
    """Return `GET .../issues/{number}/labels` (issues/list-labels-on-issue), one page of 100:
    GitHub allows at most 100 labels on an issue."""
    return _get(f"{_repo(repo)}/issues/{number}/labels", {"per_page": PER_PAGE})


def remove_issue_label(repo: str, number: int, label: str) -> RestRequest:
    """Return `DELETE .../issues/{number}/labels/{name}` (issues/remove-label); 404: not there."""
    path = f"{_repo(repo)}/issues/{number}/labels/{quote(label, safe='')}"
    return RestRequest(method="DELETE", path=path, ok=_404)


def list_issue_comments(repo: str, number: int, page: int) -> RestRequest:
    """Return one page of `GET .../issues/{number}/comments` (issues/list-comments)."""
    return _get(f"{_repo(repo)}/issues/{number}/comments", _page(page))


def add_issue_comment(repo: str, number: int, body: str) -> RestRequest:
    """Return `POST .../issues/{number}/comments` (issues/create-comment)."""
    path = f"{_repo(repo)}/issues/{number}/comments"
    return RestRequest(method="POST", path=path, body={"body": body})


def create_issue(repo: str, title: str, body: str, label: str) -> RestRequest:
    """Return `POST .../issues` opening an issue carrying `label` (issues/create)."""
    body_ = {"title": title, "body": body, "labels": [label]}
    return RestRequest(method="POST", path=f"{_repo(repo)}/issues", body=body_)


def update_issue_comment(repo: str, comment_id: int, body: str) -> RestRequest:
    """Return `PATCH .../issues/comments/{comment_id}` (issues/update-comment)."""
    path = f"{_repo(repo)}/issues/comments/{comment_id}"
    return RestRequest(method="PATCH", path=path, body={"body": body})


def list_commits(repo: str, since: str, page: int) -> RestRequest:
    """Return one page of `GET .../commits?since=` (repos/list-commits)."""
    return _get(f"{_repo(repo)}/commits", {"since": since, **_page(page)})


def create_check_run(repo: str, body: dict[str, object]) -> RestRequest:
    """Return `POST .../check-runs` (checks/create)."""
    return RestRequest(method="POST", path=f"{_repo(repo)}/check-runs", body=body)


def list_check_runs(repo: str, sha: str, page: int, *, latest: bool) -> RestRequest:
    """Return one page of `GET .../commits/{ref}/check-runs` (checks/list-for-ref)."""
    query = {"filter": "latest" if latest else "all", **_page(page)}
    return _get(f"{_repo(repo)}/commits/{_seg(sha)}/check-runs", query)


def combined_status(repo: str, sha: str, page: int) -> RestRequest:
    """Return one page of `GET .../commits/{ref}/status` (repos/get-combined-status-for-ref)."""
    return _get(f"{_repo(repo)}/commits/{_seg(sha)}/status", _page(page))


def get_branch_rules(repo: str, branch: str, page: int) -> RestRequest:
    """Return one page of `GET .../rules/branches/{branch}` (repos/get-branch-rules)."""
    return _get(f"{_repo(repo)}/rules/branches/{_seg(branch)}", _page(page))


def get_branch_protection(repo: str, branch: str) -> RestRequest:
    """Return `GET .../branches/{branch}/protection` (repos/get-branch-protection); both of
    GitHub's 404s are read by `_github.protection`."""
    return _get(f"{_repo(repo)}/branches/{_seg(branch)}/protection", ok=_404)


def check_run(repo: str, run_id: int, *, ok: frozenset[int] = _NONE) -> RestRequest:
    """Return `GET .../check-runs/{id}` (checks/get)."""
    return _get(f"{_repo(repo)}/check-runs/{run_id}", ok=ok)


def check_run_annotations(
    repo: str, run_id: int, per_page: int, *, ok: frozenset[int] = _NONE
) -> RestRequest:
    """Return `GET .../check-runs/{id}/annotations` (checks/list-annotations), one page."""
    return _get(f"{_repo(repo)}/check-runs/{run_id}/annotations", {"per_page": per_page}, ok=ok)


def job_logs(repo: str, job_id: int, *, ok: frozenset[int] = _NONE) -> RestRequest:
    """Return `GET .../actions/jobs/{id}/logs` (actions/download-job-logs-for-workflow-run)."""
    return _get(f"{_repo(repo)}/actions/jobs/{job_id}/logs", accept="*/*", ok=ok)


def rerun_job(repo: str, job_id: int) -> RestRequest:
    """Return `POST .../actions/jobs/{id}/rerun` (actions/re-run-job-for-workflow-run)."""
    return RestRequest(method="POST", path=f"{_repo(repo)}/actions/jobs/{job_id}/rerun", body={})


def workflow_runs(repo: str, head_sha: str, *, ok: frozenset[int] = _NONE) -> RestRequest:
    """Return `GET .../actions/runs?head_sha=` (actions/list-workflow-runs-for-repo), one page."""
    query = {"head_sha": head_sha, "per_page": PER_PAGE}
    return _get(f"{_repo(repo)}/actions/runs", query, ok=ok)
