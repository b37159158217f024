"""`squash-message`: the spec's JSON on stdin, `{"subject", "body"}` on stdout.

Exit 0 on success; 65 (EX_DATAERR) with one line on stderr when stdin is not UTF-8 JSON or a field
is missing or of the wrong type; 64 (EX_USAGE) for arguments. Stdlib only, so it starts fast.
"""

from __future__ import annotations

import json
import os
import sys

from ._squash import SquashCommit, format_squash_message

# typing and collections.abc are only for the type checker: start-up is this tool's figure.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["EXIT_DATAERR", "EXIT_USAGE", "main", "parse_request"]

EXIT_USAGE = 64
EXIT_DATAERR = 65
USAGE = (
    "usage: squash-message [--version] < request.json\n"
    'reads {"title", "body", "prNumber", "taskIds", "commits": [{"subject", "body"}]} on stdin\n'
    'and prints {"subject", "body"} on stdout\n'
)


class RequestError(ValueError):
    """The request on stdin is not what the spec describes."""


def parse_request(data: bytes) -> dict[str, Any]:
    """Decode and check the request; return format_squash_message's keyword arguments."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError("stdin is not UTF-8") from None
    try:
        request = json.loads(text)
    except RecursionError:
        raise RequestError("stdin is not JSON: nested too deeply") from None
    except ValueError as exc:
        # JSONDecodeError's message names the position, never echoes the input.
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "invalid"
        raise RequestError(f"stdin is not JSON: {reason}") from None
    if not isinstance(request, dict):
        raise RequestError("stdin must hold a JSON object")
    title = _field(request, "title", str, "a string")
    body = _field(request, "body", str, "a string")
    number = _field(request, "prNumber", int, "a positive integer")
    if isinstance(number, bool) or number < 1:
        raise RequestError("field prNumber must be a positive integer")
    task_ids = _field(request, "taskIds", list, "an array of strings")
    for index, task_id in enumerate(task_ids):
        if not isinstance(task_id, str):
            raise RequestError(f"field taskIds[{index}] must be a string")
    raw_commits = _field(request, "commits", list, "an array of objects")
    commits = []
    for index, commit in enumerate(raw_commits):
        where = f"commits[{index}]"
        if not isinstance(commit, dict):
            raise RequestError(f"field {where} must be an object")
        subject = _field(commit, "subject", str, "a string", where=where)
        commit_body = _field(commit, "body", str, "a string", where=where)
        commits.append(SquashCommit(subject=subject, body=commit_body))
    return {
        "title": title,
        "body": body,
        "pr_number": number,
        "task_ids": tuple(task_ids),
        "commits": tuple(commits),
    }


def _field(
    obj: dict[str, Any], key: str, kind: type, expected: str, *, where: str | None = None
) -> Any:
    name = f"{where}.{key}" if where else key
    if key not in obj:
        raise RequestError(f"missing field {name}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RequestError(f"field {name} must be {expected}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run `squash-message`: read the request on stdin, print the message JSON, return the exit."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if args == ["--version"]:
        from ._dist import version_line

        sys.stdout.write(version_line("squash-message") + "\n")
        return 0
    if args:
        sys.stderr.write(f"squash-message: takes no arguments\n{USAGE}")
        return EXIT_USAGE
    try:
        message = format_squash_message(**parse_request(sys.stdin.buffer.read()))
    except RequestError as exc:
        sys.stderr.write(f"squash-message: {exc}\n")
        return EXIT_DATAERR
    except KeyboardInterrupt:
        return 130
    try:
        out = json.dumps(message.to_json(), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (legal in JSON input) cannot be UTF-8: escape it as JSON does.
        out = json.dumps(message.to_json()).encode("ascii")
    try:
        sys.stdout.buffer.write(out + b"\n")
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # The reader went away. Point stdout at /dev/null so the exit-time flush stays quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
