"""The test forge's REST handlers for CI and branch rules: check runs and their annotations,
commit statuses, Actions runs and job logs (a redirect to a blob), rulesets and classic protection;
and the contents API (workflow files), issue creation and comment edits the train uses.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from aiohttp import web

from fakeforge.answers import error, paginate
from fakeforge.state import (
    API_HOST,
    ForgeState,
    RepoState,
    is_bot,
    latest_statuses,
    resolve_ref,
)

__all__ = ["ChecksApi"]


class ChecksApi:
    """REST handlers for CI (check runs, statuses, Actions logs) and branch rules."""

    state: ForgeState

    def create_check_run(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        token = request.headers.get("Authorization", "").removeprefix("token ").strip()
        app_id = self.state.app_tokens.get(token)
        if app_id is None:
            raise error(403, "You must authenticate via a GitHub App.")
        self.state.check_run_tokens.append(token)
        run = {
            "id": next(self.state.ids),
            "name": data["name"],
            "head_sha": data["head_sha"],
            "status": data.get("status", "queued"),
            "conclusion": data.get("conclusion"),
            "started_at": "2024-01-01T00:00:00Z",
            "completed_at": "2024-01-01T00:00:01Z" if data.get("conclusion") else None,
            "external_id": data.get("external_id", ""),
            "details_url": "http://github.localhost/runs",
            "output": data.get("output", {}),
            "app": {"id": app_id, "slug": "app"},
        }
        repo.check_runs.append(run)
        self.state.effects["create_check_run"] += 1
        return 201, run, {}

    def list_check_runs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        if resolve_ref(repo, sha) is None:
            raise error(422, f"No commit found for SHA: {sha}")
        runs = [r for r in repo.check_runs if r["head_sha"] == sha]
        if request.query.get("filter", "latest") == "latest":
            newest: dict[tuple[str, int], dict[str, Any]] = {}
            for run in runs:
                newest[(run["name"], run["app"]["id"])] = run
            runs = list(newest.values())
        chunk, headers = paginate(request, runs)
        return 200, {"total_count": len(runs), "check_runs": chunk}, headers

    def list_pull_head_check_runs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        # The commits endpoints take a ref as well as a sha; this one is the PR's head ref.
        sha = repo.pull_head(int(n))
        if sha is None:
            raise error(422, f"No commit found for SHA: refs/pull/{n}/head")
        return self.list_check_runs(request, repo, data, login, sha)

    def combined_status(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        statuses = latest_statuses(repo.statuses.get(sha, []))
        chunk, headers = paginate(request, statuses)
        states = {s["state"] for s in statuses}
        overall = (
            "failure"
            if states & {"failure", "error"}
            else "pending"
            if "pending" in states or not statuses
            else "success"
        )
        return (
            200,
            {"state": overall, "sha": sha, "total_count": len(statuses), "statuses": chunk},
            headers,
        )

    def branch_rules(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        chunk, headers = paginate(request, repo.rulesets.get(b, []))
        return 200, chunk, headers

    @staticmethod
    def _admin_only(repo: RepoState, login: str | None) -> None:
        # GitHub hides protection from callers without admin rights behind a plain 404.
        if login is not None and not is_bot(login) and login not in repo.admins:
            raise error(404, "Not Found")

    def classic(self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str) -> Any:
        self._admin_only(repo, login)
        answer = repo.classic.get(b, 404)
        if answer == 403:
            raise error(
                403, "Upgrade to GitHub Pro or make this repository public to enable this feature."
            )
        if isinstance(answer, int):
            raise error(answer, "Branch not protected")
        return 200, answer, {}

    def protection(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        self._admin_only(repo, login)
        checks = repo.classic.get(b, 404)
        if checks == 403:
            raise error(
                403, "Upgrade to GitHub Pro or make this repository public to enable this feature."
            )
        if b not in repo.protection and isinstance(checks, int):
            raise error(checks, "Branch not protected")
        url = f"http://{API_HOST}/repos/{repo.full_name}/branches/{b}/protection"
        answer: dict[str, Any] = {"url": url, "enabled": True, **repo.protection.get(b, {})}
        if isinstance(checks, dict):
            answer["required_status_checks"] = {"url": f"{url}/required_status_checks", **checks}
        return 200, answer, {}

    def get_check_run(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, run_id: str
    ) -> Any:
        for run in repo.check_runs:
            if run["id"] == int(run_id):
                return 200, run, {}
        raise error(404, "Not Found")

    def check_run_annotations(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, run_id: str
    ) -> Any:
        if not any(run["id"] == int(run_id) for run in repo.check_runs):
            raise error(404, "Not Found")
        rows = [
            {
                "path": a["path"],
                "blob_href": f"http://github.localhost/{repo.full_name}/blob/x/{a['path']}",
                "start_line": a["start_line"],
                "end_line": a.get("end_line", a["start_line"]),
                "start_column": None,
                "end_column": None,
                "annotation_level": a.get("annotation_level", "failure"),
                "title": a.get("title"),
                "message": a.get("message"),
                "raw_details": None,
            }
            for a in repo.annotations.get(int(run_id), [])
        ]
        chunk, headers = paginate(request, rows)
        return 200, chunk, headers

    def list_workflow_runs(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        wanted = request.query.get("head_sha")
        runs = [r for r in repo.workflow_runs if wanted is None or r["head_sha"] == wanted]
        chunk, headers = paginate(request, runs)
        return 200, {"total_count": len(runs), "workflow_runs": chunk}, headers

    def job_logs(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, job_id: str
    ) -> Any:
        if int(job_id) not in repo.job_logs:
            raise error(404, "Not Found")
        location = f"http://{API_HOST}/_blobs/job-logs/{repo.full_name}/{job_id}"
        return 302, {}, {"Location": location}

    def rerun_job(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, job_id: str
    ) -> Any:
        run = next((r for r in repo.check_runs if r["id"] == int(job_id)), None)
        if run is None or run["app"]["id"] != 15368:
            raise error(404, "Not Found")
        if run["status"] != "completed":
            raise error(403, "This job is already running.")
        self.state.effects["rerun_job"] += 1
        if repo.ci is not None:
            repo.ci.rerun(repo, run)
        else:  # a new run of the job on the same commit, in progress until a test ends it
            repo.add_run(str(run["head_sha"]), str(run["name"]), None)
        return 201, {}, {}

    def blob(self, request: web.Request) -> tuple[int, object, dict[str, str]]:
        found = re.fullmatch(r"/_blobs/job-logs/([^/]+/[^/]+)/(\d+)", request.path)
        repo = self.state.repos.get(found.group(1)) if found else None
        if found is None or repo is None or int(found.group(2)) not in repo.job_logs:
            raise error(404, "Not Found")
        return 200, repo.job_logs[int(found.group(2))], {}

    def create_issue(self, request: web.Request, repo: RepoState, data: Any, login: Any) -> Any:
        """`POST .../issues` (issues/create): an open issue with its labels."""
        if not data.get("title"):
            raise error(
                422, "Validation Failed", errors=[{"field": "title", "code": "missing_field"}]
            )
        number = max([*repo.prs, *repo.issues], default=0) + 1
        repo.issues[number] = {
            "title": data["title"],
            "body": data.get("body"),
            "user": {"login": login},
            "created_at": "2024-01-02T00:00:00Z",
        }
        repo.labels[number] = [str(x) for x in data.get("labels", [])]
        self.state.effects["create_issue"] += 1
        issue = {"number": number, "state": "open", **repo.issues[number]}
        return 201, issue, {}

    def update_comment(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, ident: str
    ) -> Any:
        """`PATCH .../issues/comments/{id}` (issues/update-comment)."""
        for comments in repo.comments.values():
            for comment in comments:
                if comment["id"] == int(ident):
                    if comment["user"]["login"] != login:
                        raise error(403, "Must have admin rights to Repository.")
                    comment["body"] = data["body"]
                    self.state.effects["update_issue_comment"] += 1
                    return 200, comment, {}
        raise error(404, "Not Found")

    def get_content(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, path: str
    ) -> Any:
        """`contents/{path}` (repos/get-content): a file of `repo.files`, or a directory of them."""
        path = path.strip("/")
        if path in repo.files:
            return 200, _content_item(repo, path, repo.files[path].encode()), {}
        below = sorted(p for p in repo.files if p.startswith(path + "/"))
        if not below:
            raise error(404, "Not Found")
        names: dict[str, str] = {}
        for p in below:
            name = p[len(path) + 1 :].split("/", 1)[0]
            names.setdefault(name, "file" if "/" not in p[len(path) + 1 :] else "dir")
        rows = []
        for name, kind in names.items():
            row = _content_item(repo, f"{path}/{name}", None)
            row["type"] = kind
            rows.append(row)
        return 200, rows, {}


def _content_item(repo: RepoState, path: str, text: bytes | None) -> dict[str, Any]:
    """One contents-API item as GitHub answers it (`content` and `encoding` for a file read)."""
    sha = hashlib.sha1(b"blob %d\0" % len(text or b"") + (text or b"")).hexdigest()
    api = f"https://{API_HOST}/repos/{repo.full_name}"
    html = f"http://github.localhost/{repo.full_name}/blob/main/{path}"
    item: dict[str, Any] = {
        "type": "file",
        "size": len(text or b""),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "url": f"{api}/contents/{path}",
        "git_url": f"{api}/git/blobs/{sha}",
        "html_url": html,
        "download_url": None,
        "_links": {"self": f"{api}/contents/{path}", "git": f"{api}/git/blobs/{sha}", "html": html},
    }
    if text is not None:
        item["encoding"] = "base64"
        item["content"] = base64.encodebytes(text).decode()
    return item
