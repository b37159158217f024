"""The test forge's REST routes and its handlers for refs, commits, pull requests and issues.

Each handler answers as GitHub documents it (status, body, headers) over the forge's state; an
update-branch lands later, as GitHub's asynchronous job does. CI and rules: rest_checks.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from fakeforge.answers import Answer, error, paginate
from fakeforge.graphql import answer_graphql
from fakeforge.rest_checks import ChecksApi
from fakeforge.state import (
    API_HOST,
    USER_TOKEN,
    ForgeState,
    RepoState,
    ancestors,
    is_bot,
    is_strict,
    resolve_ref,
)

__all__ = ["RestApi"]


class RestApi(ChecksApi):
    """The request handlers over one ForgeState: refs, commits, PRs, issues; CI in ChecksApi."""

    def __init__(self, state: ForgeState, lock: threading.Lock) -> None:
        self.state = state
        self.lock = lock

    def _repo(self, owner: str, name: str) -> RepoState:
        repo = self.state.repos.get(f"{owner}/{name}")
        if repo is None:
            raise error(404, "Not Found")
        return repo

    def route(
        self, request: web.Request, body: bytes, login: str | None
    ) -> tuple[int, object, dict[str, str]]:
        method, path = request.method, request.path
        data: Any = json.loads(body) if body.strip() else {}
        if path == "/graphql" and method == "POST":
            return 200, self.graphql(data, login), {}
        if path == "/user" and method == "GET":
            if login is None or is_bot(login):
                raise error(403, "Resource not accessible by integration")
            return 200, {"login": login, "id": 1}, {}
        match = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", path)
        if match is None:
            raise error(404, "Not Found")
        repo = self._repo(match.group(1), match.group(2))
        rest = match.group(3) or ""
        for pattern, verb, handler in self._table():
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                return handler(request, repo, data, login, *found.groups())
        raise error(404, "Not Found")

    def _table(self) -> list[tuple[str, str, Callable[..., tuple[int, object, dict[str, str]]]]]:
        return [
            (r"", "GET", self.get_repo),
            (r"/git/ref/(.+)", "GET", self.get_ref),
            (r"/git/refs", "POST", self.create_ref),
            (r"/git/commits/([0-9a-f]{40})", "GET", self.get_git_commit),
            (r"/git/refs/heads/(.+)", "DELETE", self.delete_ref),
            (r"/git/refs/heads/(.+)", "PATCH", self.update_ref),
            (r"/pulls", "GET", self.list_pulls),
            (r"/pulls", "POST", self.create_pull),
            (r"/pulls/(\d+)", "GET", self.get_pull),
            (r"/pulls/(\d+)/files", "GET", self.pull_files),
            (r"/pulls/(\d+)/commits", "GET", self.pull_commits),
            (r"/pulls/(\d+)/merge", "PUT", self.merge_pull),
            (r"/pulls/(\d+)/update-branch", "PUT", self.update_pull_branch),
            (r"/issues", "GET", self.list_issues),
            (r"/issues/(\d+)/labels", "GET", self.list_labels),
            (r"/issues/(\d+)/labels/(.+)", "DELETE", self.remove_label),
            (r"/issues/(\d+)/comments", "GET", self.list_comments),
            (r"/issues/(\d+)/comments", "POST", self.create_comment),
            (r"/issues", "POST", self.create_issue),
            (r"/issues/comments/(\d+)", "PATCH", self.update_comment),
            (r"/compare/(.+?)\.\.\.(.+)", "GET", self.compare),
            (r"/commits", "GET", self.list_commits),
            (r"/check-runs", "POST", self.create_check_run),
            (r"/commits/([^/]+)/check-runs", "GET", self.list_check_runs),
            (r"/commits/refs/pull/(\d+)/head/check-runs", "GET", self.list_pull_head_check_runs),
            (r"/commits/([^/]+)/status", "GET", self.combined_status),
            (r"/rules/branches/(.+)", "GET", self.branch_rules),
            (r"/branches/(.+)/protection/required_status_checks", "GET", self.classic),
            (r"/branches/(.+)/protection", "GET", self.protection),
            (r"/check-runs/(\d+)", "GET", self.get_check_run),
            (r"/check-runs/(\d+)/annotations", "GET", self.check_run_annotations),
            (r"/actions/jobs/(\d+)/logs", "GET", self.job_logs),
            (r"/actions/jobs/(\d+)/rerun", "POST", self.rerun_job),
            (r"/actions/runs", "GET", self.list_workflow_runs),
            (r"/contents/(.+)", "GET", self.get_content),
        ]

    def get_repo(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        return 200, {"full_name": repo.full_name, "default_branch": repo.default_branch}, {}

    def get_ref(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, ref: str
    ) -> Any:
        sha: str | None = None
        if ref.startswith("heads/"):
            sha = repo.branches.get(ref[len("heads/") :])
        elif found := re.fullmatch(r"pull/(\d+)/head", ref):
            sha = repo.pull_head(int(found.group(1)))
        if sha is None:
            raise error(404, "Not Found")
        return 200, {"ref": f"refs/{ref}", "object": {"sha": sha, "type": "commit"}}, {}

    def create_ref(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        ref, sha = str(data.get("ref", "")), str(data.get("sha", ""))
        if not ref.startswith("refs/heads/"):
            raise error(422, "Reference name must start with refs/heads/")
        branch = ref[len("refs/heads/") :]
        if branch in repo.branches:
            raise error(422, "Reference already exists")
        if sha not in repo.commits:
            raise error(422, "Object does not exist")
        repo.branches[branch] = sha
        self.state.effects["create_ref"] += 1
        return 201, {"ref": ref, "object": {"sha": sha, "type": "commit"}}, {}

    def get_git_commit(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, sha: str
    ) -> Any:
        if sha not in repo.commits:
            raise error(404, "Not Found")
        parents, message, _date = repo.commits[sha]
        url = f"https://{API_HOST}/repos/{repo.full_name}/git/commits"
        return (
            200,
            {
                "sha": sha,
                "message": message,
                "parents": [
                    {"sha": p, "url": f"{url}/{p}", "html_url": f"http://github.localhost/{p}"}
                    for p in parents
                ],
            },
            {},
        )

    def delete_ref(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        if repo.branches.pop(b, None) is None:
            raise error(422, "Reference does not exist")
        if repo.git is not None:
            repo.git.set_branch(repo, b, None)
        self.state.effects["delete_ref"] += 1
        return 204, None, {}

    def update_ref(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, b: str
    ) -> Any:
        """git/update-ref: 422 unless a fast-forward (or forced); each open PR into the branch
        whose head the new tip holds becomes merged at that tip, as GitHub marks it."""
        sha, tip = str(data.get("sha", "")), repo.branches.get(b)
        if tip is None:
            raise error(422, "Reference does not exist")
        if sha not in repo.commits:
            raise error(422, "Object does not exist")
        if repo.ref_update_refusal is not None:
            raise error(422, repo.ref_update_refusal)
        reach = ancestors(repo, sha)
        if tip not in reach and not data.get("force"):
            raise error(422, "Update is not a fast forward")
        if repo.git is not None:
            repo.git.set_branch(repo, b, sha)
        else:
            repo.branches[b] = sha
        repo.ref_updates.append((b, sha))
        for _number, pr in sorted(repo.prs.items()):
            if pr["state"] == "open" and pr["base"]["ref"] == b and pr["head"]["sha"] in reach:
                pr.update(state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
                pr["merge_commit_sha"] = sha
        self.state.effects["update_ref"] += 1
        if repo.after_ref_update is not None:
            repo.after_ref_update(b, sha)
        return 200, {"ref": f"refs/heads/{b}", "object": {"sha": sha, "type": "commit"}}, {}

    def _pr_json(self, repo: RepoState, pr: dict[str, Any], *, full: bool) -> dict[str, Any]:
        out = {k: v for k, v in pr.items() if not k.startswith("_")}
        out["base"] = {**pr["base"], "sha": repo.branches.get(pr["base"]["ref"], "")}
        if full and pr.get("_mergeable_states"):
            # A scripted sequence: each full read takes the next mergeable_state, the last sticks.
            states = pr["_mergeable_states"]
            pr["mergeable_state"] = states.pop(0) if len(states) > 1 else states[0]
            out["mergeable_state"] = pr["mergeable_state"]
        if full:
            files = repo.pr_files.get(pr["number"], [])
            out["changed_files"] = pr.get("changed_files", len(files))
        else:
            # A list row is GitHub's pull-request-simple: no lazily computed or counted fields.
            for key in ("mergeable_state", "merged", "changed_files"):
                out.pop(key, None)
        return out

    def list_pulls(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        state = request.query.get("state", "open")
        head = request.query.get("head")
        base = request.query.get("base")
        rows = []
        for number in sorted(repo.prs, reverse=True):
            pr = repo.prs[number]
            if state != "all" and pr["state"] != state:
                continue
            if head is not None:
                owner, _sep, wanted = head.partition(":")
                head_repo = (pr["head"]["repo"] or {}).get("full_name", "")
                if pr["head"]["ref"] != wanted or head_repo.split("/")[0] != owner:
                    continue
            if base is not None and pr["base"]["ref"] != base:
                continue
            rows.append(self._pr_json(repo, pr, full=False))
        chunk, headers = paginate(request, rows)
        # Like the forge: the ETag covers the page without lazily computed fields.
        stable = [{k: v for k, v in row.items() if k != "mergeable_state"} for row in chunk]
        etag = 'W/"' + hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest() + '"'
        headers["ETag"] = etag
        if request.headers.get("If-None-Match") == etag:
            self.state.not_modified += 1
            return 304, None, {"ETag": etag}
        return 200, chunk, headers

    def create_pull(self, request: web.Request, repo: RepoState, data: Any, *_: Any) -> Any:
        head, base = str(data.get("head", "")), str(data.get("base", ""))
        _owner, sep, branch = head.partition(":")
        branch = branch if sep else head
        for pr in repo.prs.values():
            if pr["state"] == "open" and pr["head"]["ref"] == branch and pr["base"]["ref"] == base:
                raise error(
                    422, "Validation Failed", errors=[{"message": "A pull request already exists"}]
                )
        if branch not in repo.branches or base not in repo.branches:
            raise error(422, "Validation Failed", errors=[{"field": "head", "code": "invalid"}])
        number = max(repo.prs, default=0) + 1
        pr = repo.add_pr(
            number,
            head_ref=branch,
            head_sha=repo.branches[branch],
            base_ref=base,
            title=str(data.get("title", "")),
            body=str(data.get("body", "")),
            mergeable_state="unknown",
        )
        self.state.effects["create_pr"] += 1
        return 201, self._pr_json(repo, pr, full=True), {}

    def get_pull(self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str) -> Any:
        pr = repo.prs.get(int(n))
        if pr is None:
            raise error(404, "Not Found")
        return 200, self._pr_json(repo, pr, full=True), {}

    def pull_files(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        chunk, headers = paginate(request, repo.pr_files.get(int(n), []), cap=3000)
        return 200, chunk, headers

    def pull_commits(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        rows = []
        for sha in repo.pr_commits.get(int(n), []):
            parents, message, date = repo.commits.get(sha, ((), "", "2024-01-01T00:00:00Z"))
            name, email, login = repo.commit_authors.get(
                sha, ("A U Thor", "author@example.com", None)
            )
            rows.append(
                {
                    "sha": sha,
                    "commit": {
                        "message": message,
                        "author": {"name": name, "email": email, "date": date},
                    },
                    "author": {"login": login} if login else None,
                    "parents": [{"sha": p} for p in parents],
                }
            )
        chunk, headers = paginate(request, rows, cap=250)
        return 200, chunk, headers

    def merge_pull(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if repo.before_merge is not None:
            repo.before_merge(int(n))
        pr = repo.prs.get(int(n))
        if pr is None:
            raise error(404, "Not Found")
        if pr["state"] != "open" or pr["merged"]:
            raise Answer(405, {"message": "Pull Request is not mergeable"})
        wanted = data.get("sha")
        if wanted is not None and wanted != pr["head"]["sha"]:
            raise Answer(
                409, {"message": "Head branch was modified. Review and try the merge again."}
            )
        if pr["draft"] or pr["mergeable_state"] in ("dirty", "blocked"):
            raise Answer(405, {"message": "Pull Request is not mergeable"})
        if is_strict(repo, pr["base"]["ref"]) and (
            repo.branches[pr["base"]["ref"]] not in ancestors(repo, pr["head"]["sha"])
        ):
            # The base moved after the PR was judged: GitHub refuses rather than merge a head
            # its strict rule no longer holds up to date.
            raise Answer(
                405, {"message": "Base branch was modified. Review and try the merge again."}
            )
        method = data.get("merge_method", "merge")
        base_ref, head_sha = pr["base"]["ref"], pr["head"]["sha"]
        base_tip = repo.branches[base_ref]
        parents = (base_tip, head_sha) if method == "merge" else (base_tip,)
        title = data.get("commit_title") or f"Merge pull request #{n}"
        message = title if method == "rebase" else f"{title}\n\n{data.get('commit_message', '')}"
        if repo.git is None:
            merged = repo.add_commit(f"{method}:{n}:{head_sha}", parents=parents, message=message)
            repo.branches[base_ref] = merged
        else:
            try:
                merged = repo.git.merge(repo, base_tip, head_sha, parents, message)
            except ValueError:
                raise Answer(405, {"message": "Pull Request is not mergeable"}) from None
            repo.git.set_branch(repo, base_ref, merged)
        pr.update(state="closed", merged=True, merged_at="2024-01-03T00:00:00Z")
        pr["merge_commit_sha"] = merged
        pr["_merge_message"] = message.rstrip()
        self.state.effects["merge_pr"] += 1
        if repo.after_merge is not None:
            repo.after_merge(int(n))
        return (
            200,
            {"sha": merged, "merged": True, "message": "Pull Request successfully merged"},
            {},
        )

    def update_pull_branch(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        pr = repo.prs.get(int(n))
        if pr is None:
            raise error(404, "Not Found")
        expected = data.get("expected_head_sha")
        if expected is not None and expected != pr["head"]["sha"]:
            raise error(422, "expected head sha didn't match current head ref.")
        if pr["state"] != "open" or pr["mergeable_state"] == "dirty":
            raise error(422, "merge conflict between base and head")
        base_ref, head_sha = pr["base"]["ref"], pr["head"]["sha"]
        base_tip = repo.branches[base_ref]
        url = f"http://github.localhost/{repo.full_name}/pull/{n}"
        answer = {"message": "Updating pull request branch.", "url": url}
        pending = repo.pending_updates.get(int(n))
        if pending is not None and pending[1] == head_sha:
            return 202, answer, {}  # the job for this head is still running
        if base_tip in ancestors(repo, head_sha):
            raise error(422, "There are no new commits on the base branch.")
        self.state.effects["update_branch"] += 1
        repo.pending_updates[int(n)] = [repo.update_lands_after, head_sha, base_tip]
        if repo.update_lands_after <= 0:
            self._land_update(repo, int(n))
        elif repo.update_accepted is not None:
            repo.update_accepted(int(n))
        return 202, answer, {}

    def tick_git(self) -> None:
        for repo in self.state.repos.values():
            if repo.git is not None:
                repo.git.sync(repo)
                if repo.ci is not None:
                    repo.ci.tick(repo)

    def land_updates(self) -> None:
        for repo in self.state.repos.values():
            for number, pending in list(repo.pending_updates.items()):
                pending[0] -= 1
                if pending[0] <= 0:
                    self._land_update(repo, number)

    def _land_update(self, repo: RepoState, number: int) -> None:
        _left, old, base_tip = repo.pending_updates.pop(number)
        pr = repo.prs[number]
        if pr["head"]["sha"] != old or pr["state"] != "open":
            return  # the head moved (or the PR closed) meanwhile: the job fails, nothing lands
        base_ref, head_ref = pr["base"]["ref"], pr["head"]["ref"]
        new_head = repo.add_commit(
            f"update:{number}:{old}",
            parents=(old, base_tip),
            message=f"Merge branch '{base_ref}' into {head_ref}",
        )
        pr["head"]["sha"] = new_head
        if (pr["head"]["repo"] or {}).get("full_name") == repo.full_name:
            repo.branches[head_ref] = new_head
        if repo.after_update is not None:
            repo.after_update(number, old, new_head)

    def list_issues(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        # PRs' issues carry `pull_request`; the issues of `repo.issues` do not.
        state = request.query.get("state", "open")
        wanted = [x for x in request.query.get("labels", "").split(",") if x]
        rows = []
        for number, pr in repo.prs.items():
            names = {x.casefold() for x in repo.labels.get(number, [])}
            if state != "all" and pr["state"] != state:
                continue
            if not all(w.casefold() in names for w in wanted):
                continue
            rows.append(
                {
                    "number": number,
                    "state": pr["state"],
                    "title": pr["title"],
                    "user": pr["user"],
                    "labels": [{"name": x} for x in repo.labels.get(number, [])],
                    "created_at": pr.get("created_at", "2024-01-01T00:00:00Z"),
                    "pull_request": {
                        "url": f"http://{API_HOST}/repos/{repo.full_name}/pulls/{number}"
                    },
                }
            )
        for number, issue in repo.issues.items():
            names = {x.casefold() for x in repo.labels.get(number, [])}
            if state in ("open", "all") and all(w.casefold() in names for w in wanted):
                rows.append(
                    {
                        "number": number,
                        "state": "open",
                        "title": issue["title"],
                        "user": issue["user"],
                        "labels": [{"name": x} for x in repo.labels.get(number, [])],
                        "created_at": issue["created_at"],
                    }
                )
        oldest_first = request.query.get("direction", "desc") == "asc"
        rows.sort(key=lambda r: (r["created_at"], r["number"]), reverse=not oldest_first)
        chunk, headers = paginate(request, rows)
        return 200, chunk, headers

    def list_labels(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs:
            raise error(404, "Not Found")
        chunk, headers = paginate(request, [{"name": x} for x in repo.labels.get(int(n), [])])
        return 200, chunk, headers

    def remove_label(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str, name: str
    ) -> Any:
        labels = repo.labels.get(int(n), [])
        kept = [x for x in labels if x.casefold() != name.casefold()]
        if int(n) not in repo.prs or len(kept) == len(labels):
            raise error(404, "Label does not exist")
        repo.labels[int(n)] = kept
        self.state.effects["remove_label"] += 1
        return 200, [{"name": x} for x in kept], {}

    def list_comments(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs and int(n) not in repo.issues:
            raise error(404, "Not Found")
        chunk, headers = paginate(request, repo.comments.get(int(n), []))
        return 200, chunk, headers

    def create_comment(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, n: str
    ) -> Any:
        if int(n) not in repo.prs and int(n) not in repo.issues:
            raise error(404, "Not Found")
        if not data.get("body"):
            raise error(
                422, "Validation Failed", errors=[{"field": "body", "code": "missing_field"}]
            )
        comment = {"id": next(self.state.ids), "user": {"login": login}, "body": data["body"]}
        repo.comments.setdefault(int(n), []).append(comment)
        self.state.effects["create_issue_comment"] += 1
        return 201, comment, {}

    def compare(
        self, request: web.Request, repo: RepoState, data: Any, login: Any, base: str, head: str
    ) -> Any:
        base_sha, head_sha = resolve_ref(repo, base), resolve_ref(repo, head)
        if base_sha is None or head_sha is None:
            raise error(404, "Not Found")
        base_anc, head_anc = ancestors(repo, base_sha), ancestors(repo, head_sha)
        ahead = sorted(head_anc.keys() - base_anc.keys(), key=lambda s: -head_anc[s])
        behind = len(base_anc.keys() - head_anc.keys())
        common = [s for s in head_anc if s in base_anc]
        merge_base = min(common, key=lambda s: head_anc[s]) if common else base_sha
        if base_sha == head_sha:
            status = "identical"
        elif not behind:
            status = "ahead"
        elif not ahead:
            status = "behind"
        else:
            status = "diverged"
        rows = [
            {"sha": s, "commit": {"message": repo.commits.get(s, ((), "", ""))[1]}} for s in ahead
        ]
        chunk, headers = paginate(request, rows, default=250, cap=250)
        answer = {
            "status": status,
            "ahead_by": len(ahead),
            "behind_by": behind,
            "total_commits": len(ahead),
            "merge_base_commit": {"sha": merge_base},
            "commits": chunk,
            "files": repo.compare_files.get((base, head), [])[:300],
        }
        return 200, answer, headers

    def list_commits(self, request: web.Request, repo: RepoState, *_: Any) -> Any:
        tip = repo.branches.get(request.query.get("sha", repo.default_branch))
        if tip is None:
            raise error(404, "Not Found")
        since = request.query.get("since", "")
        ancestry = ancestors(repo, tip)
        known = [s for s in ancestry if s in repo.commits and repo.commits[s][2] >= since]
        known.sort(key=lambda s: (repo.commits[s][2], -ancestry[s]), reverse=True)
        rows = [{"sha": s, "commit": {"message": repo.commits[s][1]}} for s in known]
        chunk, headers = paginate(request, rows)
        return 200, chunk, headers

    def graphql(self, data: object, login: str | None = None) -> dict[str, Any]:
        """Answer one GraphQL body (see fakeforge.graphql) for `login` (the user token's user
        when None), recording its operation and violations."""
        answer = answer_graphql(self.state, data, login or self.state.users[USER_TOKEN])
        self.state.graphql_ops[answer.operation or "(anonymous)"] += 1
        self.state.violations.extend(f"GraphQL: {v}" for v in answer.violations)
        body = answer.body
        bend = self.state.graphql_bends.get(answer.operation or "")
        if bend is not None:
            body = bend(body)
        if self.state.graphql_faults and "data" in body:
            body["errors"] = [*body.get("errors", []), self.state.graphql_faults.pop(0)]
        return body
