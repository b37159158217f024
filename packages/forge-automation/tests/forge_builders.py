"""The forge tests' builders and types, importable by name (`from forge_builders import ...`).

Every package's tests dir is on the path and each has its own `conftest.py`, so tests never import
`conftest` by name: what they need beside the fixtures lives here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    CheckRunConclusion,
    CheckStatus,
    ExecOptions,
    ExecResult,
    FakeForge,
    ForgeWire,
    PullRequest,
    gh_cli_wire,
)

REPO = "acme/widgets"

# Builders: each fixture returns a function, so a test states only what differs from green.
GreenPr = Callable[..., str]
OpenPr = Callable[..., PullRequest]
GreenFake = Callable[..., FakeForge]

# A forge-cli command run against a local forge: its completed process (stdout, stderr as text).
ForgeCli = Callable[..., subprocess.CompletedProcess[str]]
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


def pull_request(head: str, **fields: Any) -> PullRequest:
    """Return PR #1 at `head`: open, clean, `feature` into `main` of `acme/widgets`; `fields` differ."""
    defaults: dict[str, Any] = {
        "number": 1,
        "state": "open",
        "head_ref": "feature",
        "head_repo": REPO,
        "base_ref": "main",
        "mergeable_state": "clean",
    }
    return PullRequest(head_sha=head, **{**defaults, **fields})


def check_run(
    name: str,
    conclusion: CheckRunConclusion | None = "success",
    *,
    head_sha: str,
    app_id: int | None = ACTIONS_APP_ID,
    run_id: int = 1,
    status: CheckStatus | None = None,
    completed_at: str | None = None,
) -> CheckRun:
    """Return a check run `name` on `head_sha`: completed with `conclusion`, else in progress."""
    return CheckRun(
        id=run_id,
        name=name,
        status=status or ("completed" if conclusion else "in_progress"),
        conclusion=conclusion,
        app_id=app_id,
        head_sha=head_sha,
        completed_at=completed_at,
    )


def _answered(body: Any) -> ExecResult:
    """Return gh's output for GitHub's 200 answer with `body` as JSON (`gh api -i`)."""
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps(body).encode()
    return ExecResult(returncode=0, stdout=raw, stderr=b"")


def answering_wire(body: Any) -> ForgeWire:
    """Return a gh wire whose every call GitHub answers 200 with `body` as JSON (no gh runs)."""
    return gh_cli_wire(lambda args, options: _answered(body), timeout=5.0)


def graphql_wire(answer: Callable[[str, Mapping[str, Any]], Any]) -> ForgeWire:
    """Return a gh wire whose GraphQL documents `answer(query, variables)` answers in-process
    (the local forge's `ForgeServer.graphql`, bends included): no gh runs, the document sent is
    the package's own."""

    def exec(args: Sequence[str], options: ExecOptions) -> ExecResult:
        document = json.loads(options.input or b"{}")
        return _answered(answer(document["query"], document.get("variables") or {}))

    return gh_cli_wire(exec, timeout=5.0)
