"""forge-cli pr-context: a PR's title, base, head sha and changed files, then its body."""

from __future__ import annotations

from ._common import out, port, pr_ref, read_pr

__all__ = ["pr_context_command"]


def pr_context_command(ref: str) -> None:
    """Print a PR's title, base, head sha and changed files, then its body."""
    from .._constants import PR_FILES_CAP
    from .._errors import FileListTruncatedError

    repo, number = pr_ref(ref)
    forge = port()
    pr = read_pr(forge, repo, number, "pr-context")
    out(f"title: {pr.title}")
    out(f"base: {pr.base_ref}")
    out(f"head: {pr.head_sha}")
    count = pr.changed_files
    if count is not None and count > PR_FILES_CAP:
        out(f"files: {count} (more than the forge lists; {PR_FILES_CAP:,} at most, none shown)")
    else:
        try:
            files = forge.list_pr_files(repo, number)
        except FileListTruncatedError as exc:
            out(f"files: {exc.expected} (listing came back with {exc.received}; none shown)")
        else:
            out(f"files: {len(files)}")
            for entry in files:
                moved = f"{entry.previous_path} -> " if entry.previous_path else ""
                out(f"  {entry.status} {moved}{entry.path}")
    out("")
    out(pr.body)
