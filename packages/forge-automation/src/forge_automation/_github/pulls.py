"""Reading pull requests, their commits and files, refs, comparisons, issues and comments.

REST's answers; pr-status's GraphQL `PullRequest` is read by `snapshot` (which must not load
every record of `_types`). Each raises `_Unmappable` on a body of another shape (see
`failures.parsed`).
"""

from __future__ import annotations

from collections.abc import Mapping

from .._constants import COMPARE_FILES_CAP
from .._records import MERGEABLE_STATES, PR_STATES, PullRequest
from .._types import (
    COMPARE_STATUSES,
    FILE_STATUSES,
    Ancestry,
    Commit,
    CompareFiles,
    FileEntry,
    IssueComment,
    LabelledPr,
    PrCommit,
)
from .shape import (
    _bool,
    _int,
    _list,
    _login,
    _obj,
    _one_of,
    _opt_int,
    _opt_obj,
    _opt_one_of,
    _opt_str,
    _str,
    _Unmappable,
)

__all__ = [
    "ancestry_from_rest",
    "commit_parents_from_rest",
    "commit_shas_from_rest",
    "commits_from_rest",
    "compare_files_from_rest",
    "file_from_rest",
    "files_from_rest",
    "issue_comments_from_rest",
    "labelled_prs_from_rest",
    "labels_from_rest",
    "merge_sha_from_rest",
    "pr_commit_from_rest",
    "pr_commits_from_rest",
    "pull_from_rest",
    "pulls_from_rest",
    "ref_object_sha",
    "ref_sha_from_rest",
]


def pull_from_rest(value: object) -> PullRequest:
    """Return the PR a REST `pull-request` (or `pull-request-simple` row) describes."""
    data = _obj(value)
    head = _obj(data["head"])
    base = _obj(data["base"])
    head_repo = head.get("repo")
    merged_at = _opt_str(data.get("merged_at"))
    merged = data.get("merged")
    return PullRequest(
        number=_int(data["number"]),
        state=_one_of(data["state"], PR_STATES),
        head_sha=_str(head["sha"]),
        head_ref=_str(head["ref"]),
        head_repo=_str(head_repo["full_name"]) if isinstance(head_repo, Mapping) else None,
        base_ref=_str(base["ref"]),
        base_sha=_opt_str(base.get("sha")),
        mergeable_state=_opt_one_of(data.get("mergeable_state"), MERGEABLE_STATES) or "unknown",
        merged=merged_at is not None if merged is None else _bool(merged),
        merge_sha=_opt_str(data.get("merge_commit_sha")),
        merged_at=merged_at,
        behind=False,
        draft=bool(data.get("draft") or False),
        title=_opt_str(data.get("title")) or "",
        body=_opt_str(data.get("body")) or "",
        changed_files=_opt_int(data.get("changed_files")),
        author=_login(data.get("user")),
        updated_at=_opt_str(data.get("updated_at")),
    )


def pulls_from_rest(value: object) -> tuple[PullRequest, ...]:
    """Return the PRs of one page of `GET .../pulls`."""
    return tuple(pull_from_rest(p) for p in _list(value))


def pr_commit_from_rest(value: object) -> PrCommit:
    """Return one row of `GET .../pulls/{n}/commits` with its message split and its author."""
    data = _obj(value)
    commit = _obj(data["commit"])
    author = _opt_obj(commit.get("author"))
    subject, _, body = _str(commit["message"]).replace("\r\n", "\n").partition("\n")
    return PrCommit(
        sha=_str(data["sha"]),
        subject=subject,
        body=body.strip("\n"),
        author_name=_opt_str(author.get("name")),
        author_email=_opt_str(author.get("email")),
        author_login=_login(data.get("author")),
        parents=tuple(_str(_obj(p)["sha"]) for p in _list(data.get("parents") or [])),
    )


def pr_commits_from_rest(value: object) -> tuple[PrCommit, ...]:
    """Return one page of `GET .../pulls/{n}/commits`, oldest first."""
    return tuple(pr_commit_from_rest(c) for c in _list(value))


def commit_shas_from_rest(value: object) -> tuple[str, ...]:
    """Return the shas of one page of `GET .../pulls/{n}/commits`, oldest first."""
    return tuple(_str(_obj(c)["sha"]) for c in _list(value))


def file_from_rest(value: object) -> FileEntry:
    """Return one changed file of a PR's file list or a comparison."""
    data = _obj(value)
    return FileEntry(
        path=_str(data["filename"]),
        previous_path=_opt_str(data.get("previous_filename")),
        status=_opt_one_of(data.get("status"), FILE_STATUSES) or "modified",
        additions=_opt_int(data.get("additions")) or 0,
        deletions=_opt_int(data.get("deletions")) or 0,
    )


def files_from_rest(value: object) -> tuple[FileEntry, ...]:
    """Return one page of `GET .../pulls/{n}/files`."""
    return tuple(file_from_rest(f) for f in _list(value))


def ancestry_from_rest(value: object) -> Ancestry:
    """Return how a comparison's head relates to its base."""
    data = _obj(value)
    merge_base = _opt_obj(data.get("merge_base_commit"))
    return Ancestry(
        status=_one_of(data["status"], COMPARE_STATUSES),
        ahead_by=_int(data["ahead_by"]),
        behind_by=_int(data["behind_by"]),
        merge_base_sha=_opt_str(merge_base.get("sha")),
    )


def compare_files_from_rest(value: object) -> CompareFiles:
    """Return a comparison's files, truncated when GitHub cut the files or the commits."""
    data = _obj(value)
    files = tuple(file_from_rest(f) for f in _list(data.get("files") or []))
    commits = _list(data.get("commits") or [])
    total = _int(data.get("total_commits", len(commits)))
    truncated = len(files) >= COMPARE_FILES_CAP or len(commits) < total
    merge_base = _opt_obj(data.get("merge_base_commit"))
    return CompareFiles(
        merge_base_sha=_opt_str(merge_base.get("sha")) or "", files=files, truncated=truncated
    )


def ref_object_sha(value: object) -> str:
    """Return the sha a `git/ref` object points at."""
    return _str(_obj(_obj(value)["object"])["sha"])


def ref_sha_from_rest(value: object) -> str | None:
    """Return the sha a `git/ref` answer points at; None for a prefix match (a list)."""
    if isinstance(value, list):  # the forge answers a prefix match as a list: not this ref
        return None
    return ref_object_sha(value)


def commit_parents_from_rest(value: object) -> tuple[str, ...]:
    """Return the parents of a `git/commits/{sha}` answer."""
    return tuple(_str(_obj(p)["sha"]) for p in _list(_obj(value)["parents"]))


def labelled_prs_from_rest(value: object) -> tuple[LabelledPr, ...]:
    """Return the PRs of an issue listing; the issues it holds too are left out."""
    return tuple(
        LabelledPr(
            number=_int(_obj(i)["number"]),
            state=_one_of(_obj(i)["state"], PR_STATES),
            created_at=_opt_str(_obj(i).get("created_at")),
        )
        for i in _list(value)
        # The issue listing holds issues too; a PR's row carries `pull_request`.
        if _obj(i).get("pull_request") is not None
    )


def labels_from_rest(value: object) -> tuple[str, ...]:
    """Return the names of an issue's labels."""
    return tuple(_str(_obj(x)["name"]) for x in _list(value))


def issue_comments_from_rest(value: object) -> tuple[IssueComment, ...]:
    """Return one page of an issue's conversation comments."""
    return tuple(
        IssueComment(
            id=_int(_obj(c)["id"]),
            author=_login(_obj(c).get("user")),
            body=_opt_str(_obj(c).get("body")) or "",
        )
        for c in _list(value)
    )


def commits_from_rest(value: object) -> tuple[Commit, ...]:
    """Return one page of `GET .../commits`."""
    return tuple(
        Commit(
            sha=_str(_obj(c)["sha"]),
            message=_opt_str(_opt_obj(_obj(c).get("commit")).get("message")) or "",
        )
        for c in _list(value)
    )


def merge_sha_from_rest(value: object) -> str:
    """Return the merge commit of a `pulls/{n}/merge` answer; `merged: false` is unreadable."""
    data = _obj(value)
    if not _bool(data["merged"]):
        raise _Unmappable
    return _str(data["sha"])
