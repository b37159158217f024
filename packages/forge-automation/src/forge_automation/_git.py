"""git reads: the real `GitExec` and `ls_remote_pull_head`.

Credentials reach git through `env` only (for example `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/
`GIT_CONFIG_VALUE_0` carrying an `http.extraHeader`), never argv or the URL, and git never prompts:
`GIT_TERMINAL_PROMPT=0` is set on every child.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from ._errors import ForgeError, ForgeInputError, LsRemoteError
from ._exec import ExecOptions, ExecResult, GitExec, run_child
from ._redact import redact_forge_secrets, redact_split

__all__ = ["exec_git", "ls_remote_pull_head"]

_OBJECT_ID = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}
# Values this short are flags and counts ("0", "1", "true"), not secrets: cutting them would
# shred the message without protecting anything.
_MIN_SECRET_LENGTH = 6
_MAX_PR_NUMBER = 2**31 - 1


def exec_git(args: Sequence[str], options: ExecOptions) -> ExecResult:
    """Run `git` with `args`; `options.env` is added to this child's environment only."""
    env = {**os.environ, **(options.env or {}), **_NO_PROMPT}
    return run_child("git", args, options, env=env, error=ForgeError)


def ls_remote_pull_head(
    exec: GitExec,
    remote_url: str,
    n: int,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> str | None:
    """Return the sha of `refs/pull/<n>/head` on the remote, or None when it has no such ref."""
    _check_url(remote_url)
    if not _pr_number(n):
        raise ForgeInputError("n", "must be a positive pull request number")
    child_env = _check_env(env)
    if timeout is not None and not timeout > 0:
        raise ForgeInputError("timeout", "must be a positive number of seconds")
    ref = f"refs/pull/{n}/head"
    secrets = tuple(v for v in child_env.values() if len(v) >= _MIN_SECRET_LENGTH)
    options = ExecOptions(env={**child_env, **_NO_PROMPT}, timeout=timeout)
    result: ExecResult | None = None
    failure = ""
    try:
        result = exec(["ls-remote", "--", remote_url, ref], options)
    except Exception as exc:
        # Only redacted text leaves this block: raising here would chain `exc` as __context__.
        failure = redact_forge_secrets(f"{exc}", extra=secrets)
    if result is None:
        raise LsRemoteError(f"git ls-remote could not run: {failure}")
    if result.returncode != 0:
        out, err = redact_split(
            result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"),
            extra=secrets,
        )
        detail = (err.strip() or out.strip() or "no output")[:2000]
        raise LsRemoteError(f"git ls-remote exited {result.returncode}: {detail}")
    try:
        text = result.stdout.decode("ascii")
    except UnicodeDecodeError:
        raise LsRemoteError("git ls-remote printed output that is not a ref listing") from None
    for line in text.splitlines():
        if not line:
            continue
        sha, tab, name = line.partition("\t")
        if not tab or not _OBJECT_ID.match(sha):
            raise LsRemoteError("git ls-remote printed a line with no object id")
        # ls-remote matches patterns by suffix: refs/foo/refs/pull/1/head would match too.
        if name == ref:
            return sha
    return None


def _pr_number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return 1 <= value <= _MAX_PR_NUMBER


def _check_url(remote_url: object) -> None:
    if not isinstance(remote_url, str) or not remote_url:
        raise ForgeInputError("remote_url", "must be an https: or file: URL")
    if not remote_url.isprintable() or any(c.isspace() for c in remote_url):
        raise ForgeInputError("remote_url", "must not contain spaces or control characters")
    try:
        parts = urlsplit(remote_url)
        port = parts.port
    except ValueError:
        raise ForgeInputError("remote_url", "is not a valid URL") from None
    if parts.scheme not in ("https", "file") or not remote_url.startswith(f"{parts.scheme}://"):
        raise ForgeInputError("remote_url", "must be an https: or file: URL")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise ForgeInputError("remote_url", "must not carry a user or password; pass them in env")
    if parts.query or parts.fragment or "?" in remote_url or "#" in remote_url:
        raise ForgeInputError("remote_url", "must not carry a query or fragment")
    if parts.scheme == "https" and not parts.hostname:
        raise ForgeInputError("remote_url", "must name a host")
    if parts.scheme == "file" and (parts.netloc not in ("", "localhost") or port is not None):
        raise ForgeInputError("remote_url", "a file: URL must name a local path")
    if parts.scheme == "file" and not parts.path.startswith("/"):
        raise ForgeInputError("remote_url", "a file: URL must name an absolute path")


def _check_env(env: object) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ForgeInputError("env", "must be a mapping of strings")
    checked: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ForgeInputError("env", "must map strings to strings")
        if not name or "=" in name or "\0" in name or "\0" in value:
            # Never echo the value: it is where credentials live.
            raise ForgeInputError("env", f"entry {name[:40]!r} cannot be set in an environment")
        checked[name] = value
    return checked
