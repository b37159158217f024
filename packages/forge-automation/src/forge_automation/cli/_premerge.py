"""forge-cli premerge: the last gate before the merge button, OK (0) or FAIL (1)."""

from __future__ import annotations

from ._common import CliExit, merge_target, out, port, print_json

__all__ = ["premerge_command"]


def premerge_command(
    ref: str,
    head_sha: str,
    approved_head: str,
    clone: str | None = None,
    as_json: bool = False,
) -> None:
    """Check a PR may merge at HEAD_SHA: OK (0) or FAIL with every reason (1)."""
    from .._premerge import premerge

    repo, number = merge_target(ref, head_sha, approved_head, clone)
    result = premerge(port(), repo, number, head_sha, approved_head=approved_head, clone=clone)
    if as_json:
        print_json(result.to_json())
    elif result.ok:
        required = ",".join(result.required) or "-"
        out(
            f"OK {repo}#{number} head={result.head} base={result.base} required={required} "
            f"strict={'true' if result.strict else 'false'} behind={result.behind_by}"
        )
    else:
        out(f"FAIL {repo}#{number}: {'; '.join(result.reasons)}")
    raise CliExit(0 if result.ok else 1)
