"""The process seams: one `GhExec` for every `gh` call and one `GitExec` for every `git` call.

Tests replace these callables; production uses `run_gh` and `exec_git`'s subprocess runner.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["ExecOptions", "ExecResult", "GhExec", "GitExec"]


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
