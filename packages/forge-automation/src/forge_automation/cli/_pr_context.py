"""forge-cli pr-context: a PR's title, base, head sha and changed files, then its body.

With `--json`, one JSON object (the README documents its keys): `files` is null when the forge
could not list them all, and `files_count` then says how many there are.
"""

from __future__ import annotations

from ._common import out, port, pr_ref, print_json, read_pr

__all__ = ["pr_context_command"]


def pr_context_command(ref: str, as_json: bool = False) -> None:
    """Print a PR's title, base, head sha and changed files, then its body."""
    from .._constants import PR_FILES_CAP
    from .._errors import FileListTruncatedError

    repo, number = pr_ref(ref)
    forge = port()
    pr = read_pr(forge, repo, number, "pr-context")
    count = pr.changed_files
    files = None
    if count is not None and count > PR_FILES_CAP:
        note = f"files: {count} (more than the forge lists; {PR_FILES_CAP:,} at most, none shown)"
    else:
        try:
            files = forge.list_pr_files(repo, number)
        except FileListTruncatedError as exc:
            count = exc.expected
            note = f"files: {exc.expected} (listing came back with {exc.received}; none shown)"
        else:
            count = len(files)
            note = f"files: {len(files)}"
    if as_json:
        print_json(
            {
                "repo": repo,
                "number": number,
                "title": pr.title,
                "base": pr.base_ref,
                "head": pr.head_sha,
                "files_count": count,
                "files": None
                if files is None
                else [
                    {"status": f.status, "path": f.path, "previous_path": f.previous_path}
                    for f in files
                ],
                "body": pr.body,
            }
        )
        return
    out(f"title: {pr.title}")
    out(f"base: {pr.base_ref}")
    out(f"head: {pr.head_sha}")
    out(note)
    for entry in files or ():
        moved = f"{entry.previous_path} -> " if entry.previous_path else ""
        out(f"  {entry.status} {moved}{entry.path}")
    out("")
    out(pr.body)
