"""forge-cli premerge: the last gate before the merge button, OK (0) or FAIL (1)."""

from __future__ import annotations

import os

from ._common import CliExit, UsageError, out, port, pr_ref, print_json

__all__ = ["premerge_command"]


def premerge_command(
    ref: str,
    head_sha: str,
    approved_head: str,
    clone: str | None = None,
    as_json: bool = False,
) -> None:
    """Check a PR may merge at HEAD_SHA: OK (0) or FAIL with every reason (1)."""
    from .._errors import ForgeInputError
    from .._premerge import premerge, validate_full_sha

    repo, number = pr_ref(ref)
    try:
        validate_full_sha(head_sha, "head_sha")
        validate_full_sha(approved_head, "approved_head")
    except ForgeInputError as exc:
        raise UsageError(str(exc)) from None
    if clone is not None and not os.path.isdir(clone):
        raise UsageError(f"--clone {clone[:200]!r} is not a directory")
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
