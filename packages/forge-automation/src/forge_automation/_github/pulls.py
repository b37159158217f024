"""Reading pull requests, their commits and files, refs, comparisons, issues and comments.

REST's answers; pr-status's GraphQL `PullRequest` is read by `snapshot` (which must not load
every record of `_types`). Each raises `shape.Unmappable` on a body of another shape (see
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
    LabelledIssue,
    LabelledPr,
    PrCommit,
)
from . import shape

__all__ = [
    "ancestry_from_rest",
    "commit_parents_from_rest",
    "commit_shas_from_rest",
    "commits_from_rest",
    "compare_files_from_rest",
    "directory_files_from_rest",
    "file_from_rest",
    "files_from_rest",
    "issue_comments_from_rest",
    "labelled_issues_from_rest",
    "labelled_prs_from_rest",
    "labels_from_rest",
    "merge_sha_from_rest",
    "pr_commit_from_rest",
    "pr_commits_from_rest",
    "pull_from_rest",
    "pulls_from_rest",
    "ref_object_sha",
    "ref_sha_from_rest",
    "text_file_from_rest",
]


def pull_from_rest(value: object) -> PullRequest:
    """Return the PR a REST `pull-request` (or `pull-request-simple` row) describes."""
    data = shape.as_obj(value)
    head = shape.as_obj(data["head"])
    base = shape.as_obj(data["base"])
    head_repo = head.get("repo")
    merged_at = shape.opt_str(data.get("merged_at"))
    merged = data.get("merged")
    return PullRequest(
        number=shape.as_int(data["number"]),
        state=shape.one_of(data["state"], PR_STATES),
        head_sha=shape.as_str(head["sha"]),
        head_ref=shape.as_str(head["ref"]),
        head_repo=shape.as_str(head_repo["full_name"]) if isinstance(head_repo, Mapping) else None,
        base_ref=shape.as_str(base["ref"]),
        base_sha=shape.opt_str(base.get("sha")),
        mergeable_state=shape.opt_one_of(data.get("mergeable_state"), MERGEABLE_STATES)
        or "unknown",
        merged=merged_at is not None if merged is None else shape.as_bool(merged),
        merge_sha=shape.opt_str(data.get("merge_commit_sha")),
        merged_at=merged_at,
        behind=False,
        draft=bool(data.get("draft") or False),
        title=shape.opt_str(data.get("title")) or "",
        body=shape.opt_str(data.get("body")) or "",
        changed_files=shape.opt_int(data.get("changed_files")),
        author=shape.login(data.get("user")),
        updated_at=shape.opt_str(data.get("updated_at")),
    )


def pulls_from_rest(value: object) -> tuple[PullRequest, ...]:
    """Return the PRs of one page of `GET .../pulls`."""
    return tuple(pull_from_rest(p) for p in shape.as_list(value))


def pr_commit_from_rest(value: object) -> PrCommit:
    """Return one row of `GET .../pulls/{n}/commits` with its message split and its author."""
    data = shape.as_obj(value)
    commit = shape.as_obj(data["commit"])
    author = shape.opt_obj(commit.get("author"))
    subject, _, body = shape.as_str(commit["message"]).replace("\r\n", "\n").partition("\n")
    return PrCommit(
        sha=shape.as_str(data["sha"]),
        subject=subject,
        body=body.strip("\n"),
        author_name=shape.opt_str(author.get("name")),
        author_email=shape.opt_str(author.get("email")),
        author_login=shape.login(data.get("author")),
        parents=tuple(
            shape.as_str(shape.as_obj(p)["sha"]) for p in shape.as_list(data.get("parents") or [])
        ),
    )


def pr_commits_from_rest(value: object) -> tuple[PrCommit, ...]:
    """Return one page of `GET .../pulls/{n}/commits`, oldest first."""
    return tuple(pr_commit_from_rest(c) for c in shape.as_list(value))


def commit_shas_from_rest(value: object) -> tuple[str, ...]:
    """Return the shas of one page of `GET .../pulls/{n}/commits`, oldest first."""
    return tuple(shape.as_str(shape.as_obj(c)["sha"]) for c in shape.as_list(value))


def file_from_rest(value: object) -> FileEntry:
    """Return one changed file of a PR's file list or a comparison."""
    data = shape.as_obj(value)
    return FileEntry(
        path=shape.as_str(data["filename"]),
        previous_path=shape.opt_str(data.get("previous_filename")),
        status=shape.opt_one_of(data.get("status"), FILE_STATUSES) or "modified",
        additions=shape.opt_int(data.get("additions")) or 0,
        deletions=shape.opt_int(data.get("deletions")) or 0,
    )


def files_from_rest(value: object) -> tuple[FileEntry, ...]:
    """Return one page of `GET .../pulls/{n}/files`."""
    return tuple(file_from_rest(f) for f in shape.as_list(value))


def ancestry_from_rest(value: object) -> Ancestry:
    """Return how a comparison's head relates to its base."""
    data = shape.as_obj(value)
    merge_base = shape.opt_obj(data.get("merge_base_commit"))
    return Ancestry(
        status=shape.one_of(data["status"], COMPARE_STATUSES),
        ahead_by=shape.as_int(data["ahead_by"]),
        behind_by=shape.as_int(data["behind_by"]),
        merge_base_sha=shape.opt_str(merge_base.get("sha")),
    )


def compare_files_from_rest(value: object) -> CompareFiles:
    """Return a comparison's files, truncated when GitHub cut the files or the commits."""
    data = shape.as_obj(value)
    files = tuple(file_from_rest(f) for f in shape.as_list(data.get("files") or []))
    commits = shape.as_list(data.get("commits") or [])
    total = shape.as_int(data.get("total_commits", len(commits)))
    truncated = len(files) >= COMPARE_FILES_CAP or len(commits) < total
    merge_base = shape.opt_obj(data.get("merge_base_commit"))
    return CompareFiles(
        merge_base_sha=shape.opt_str(merge_base.get("sha")) or "", files=files, truncated=truncated
    )


def ref_object_sha(value: object) -> str:
    """Return the sha a `git/ref` object points at."""
    return shape.as_str(shape.as_obj(shape.as_obj(value)["object"])["sha"])


def ref_sha_from_rest(value: object) -> str | None:
    """Return the sha a `git/ref` answer points at; None for a prefix match (a list)."""
    if isinstance(value, list):  # the forge answers a prefix match as a list: not this ref
        return None
    return ref_object_sha(value)


def commit_parents_from_rest(value: object) -> tuple[str, ...]:
    """Return the parents of a `git/commits/{sha}` answer."""
    return tuple(
        shape.as_str(shape.as_obj(p)["sha"]) for p in shape.as_list(shape.as_obj(value)["parents"])
    )


def labelled_prs_from_rest(value: object) -> tuple[LabelledPr, ...]:
    """Return the PRs of an issue listing; the issues it holds too are left out."""
    return tuple(
        LabelledPr(
            number=shape.as_int(shape.as_obj(i)["number"]),
            state=shape.one_of(shape.as_obj(i)["state"], PR_STATES),
            created_at=shape.opt_str(shape.as_obj(i).get("created_at")),
        )
        for i in shape.as_list(value)
        # The issue listing holds issues too; a PR's row carries `pull_request`.
        if shape.as_obj(i).get("pull_request") is not None
    )


def labelled_issues_from_rest(value: object) -> tuple[LabelledIssue, ...]:
    """Return the issues of an issue listing; the PRs it holds too are left out."""
    return tuple(
        LabelledIssue(
            number=shape.as_int(shape.as_obj(i)["number"]),
            author=shape.login(shape.as_obj(i).get("user")),
            title=shape.as_str(shape.as_obj(i)["title"]),
        )
        for i in shape.as_list(value)
        if shape.as_obj(i).get("pull_request") is None
    )


def labels_from_rest(value: object) -> tuple[str, ...]:
    """Return the names of an issue's labels."""
    return tuple(shape.as_str(shape.as_obj(x)["name"]) for x in shape.as_list(value))


def issue_comments_from_rest(value: object) -> tuple[IssueComment, ...]:
    """Return one page of an issue's conversation comments."""
    return tuple(
        IssueComment(
            id=shape.as_int(shape.as_obj(c)["id"]),
            author=shape.login(shape.as_obj(c).get("user")),
            body=shape.opt_str(shape.as_obj(c).get("body")) or "",
        )
        for c in shape.as_list(value)
    )


def commits_from_rest(value: object) -> tuple[Commit, ...]:
    """Return one page of `GET .../commits`."""
    return tuple(
        Commit(
            sha=shape.as_str(shape.as_obj(c)["sha"]),
            message=shape.opt_str(shape.opt_obj(shape.as_obj(c).get("commit")).get("message"))
            or "",
        )
        for c in shape.as_list(value)
    )


def merge_sha_from_rest(value: object) -> str:
    """Return the merge commit of a `pulls/{n}/merge` answer; `merged: false` is unreadable."""
    data = shape.as_obj(value)
    if not shape.as_bool(data["merged"]):
        raise shape.Unmappable
    return shape.as_str(data["sha"])


def directory_files_from_rest(value: object) -> tuple[str, ...]:
    """Return the paths of the files (type `file`) a `contents/{dir}` answer lists."""
    entries = [shape.as_obj(e) for e in shape.as_list(value)]
    return tuple(shape.as_str(e["path"]) for e in entries if shape.as_str(e["type"]) == "file")


def text_file_from_rest(value: object) -> str:
    """Return a `contents/{file}` answer's text: base64 of UTF-8 (a file over 1 MB has none)."""
    data = shape.as_obj(value)
    if shape.as_str(data["type"]) != "file" or shape.as_str(data["encoding"]) != "base64":
        raise shape.Unmappable
    import base64

    return base64.b64decode(shape.as_str(data["content"]), validate=False).decode("utf-8")
