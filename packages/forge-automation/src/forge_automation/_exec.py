"""The process seams: one `GhExec` for every `gh` call and one `GitExec` for every `git` call.

Tests replace these callables; production uses `run_gh` and `exec_git`'s subprocess runner.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from ._errors import ForgeError

__all__ = ["ExecOptions", "ExecResult", "GhExec", "GitExec", "run_child"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecOptions:
    """How to run one child: stdin bytes, extra env for this child only, timeout in seconds."""

    input: bytes | None = None
    env: Mapping[str, str] | None = None
    timeout: float | None = None
    cwd: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecResult:
    """What one child process left: its exit code and raw output."""

    returncode: int
    stdout: bytes
    stderr: bytes


# Arguments exclude the program name: GhExec(["api", "/user", "-i"], ExecOptions()).
GhExec: TypeAlias = Callable[[Sequence[str], ExecOptions], ExecResult]
GitExec: TypeAlias = Callable[[Sequence[str], ExecOptions], ExecResult]


def run_child(
    program: str,
    args: Sequence[str],
    options: ExecOptions,
    *,
    env: Mapping[str, str],
    error: Callable[[str], ForgeError],
) -> ExecResult:
    """Run `program` with `args` and `env`; a failure to run raises `error(<fixed text>)`.

    stdin is empty unless `options.input` is given, so a child never waits on a terminal. The
    error is raised outside the `except` block, so nothing is chained as `__context__`: a
    `TimeoutExpired` carries the child's argv and partial output.
    """
    done: subprocess.CompletedProcess[bytes] | None = None
    failure = ""
    try:
        done = subprocess.run(
            [program, *args],
            input=options.input if options.input is not None else b"",
            capture_output=True,
            env=dict(env),
            timeout=options.timeout,
            cwd=options.cwd,
            check=False,
        )
    except FileNotFoundError:
        failure = f"{program} is not installed or not on PATH"
    except subprocess.TimeoutExpired:
        failure = f"{program} timed out after {options.timeout} s"
    except OSError as exc:
        failure = f"{program} could not start: {exc.strerror}"
    if done is None:
        raise error(failure)
    return ExecResult(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)
