"""Fixtures for the forge package: the local forge API server and "a green PR" builders.

- `server` (alias `forge_server`): a fresh `fakeforge.ForgeServer` for one test; `repo`:
  `acme/widgets` on it with `main` at a root commit; `green_pr(...)`: PR #1 on that repo, CI green.
- `open_pr(...)`: a `PullRequest` record, open and clean, `feature` into `main`; `green_fake(...)`:
  the in-memory `fake_forge()` holding that PR with a ruleset requiring `ci` and `ci` green.
- `forge_cli(server, *args)`: forge-cli run as a subprocess against a local forge.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence

import pytest

from fakeforge import GH_MARK, ForgeServer, RepoState
from forge_automation import (
    FakeForge,
    RequiredChecks,
    RequiredContext,
    fake_forge,
)
from forge_builders import (
    FORGE_CLI,
    REPO,
    ForgeCli,
    GreenFake,
    GreenPr,
    OpenPr,
    check_run,
    pull_request,
)

# Every gh child of every test, subprocesses of forge-cli included, inherits these: recent gh
# builds a telemetry payload per call and checks for updates; nothing may leave loopback.
GH_QUIET = {"GH_TELEMETRY": "false", "DO_NOT_TRACK": "1", "GH_NO_UPDATE_NOTIFIER": "1"}
os.environ.update(GH_QUIET)


@pytest.fixture(autouse=True)
def gh_mark(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that runs the real gh against a local forge without `@pytest.mark.gh`."""
    before = GH_MARK.requests
    yield
    if GH_MARK.requests > before and request.node.get_closest_marker("gh") is None:
        pytest.fail(
            "this test runs the real gh against the local forge: mark it @pytest.mark.gh "
            "(make test-gh-newest runs those again under the newest gh)",
            pytrace=False,
        )


@pytest.fixture
def server() -> Iterator[ForgeServer]:
    """Serve a fresh local forge API on 127.0.0.1:0 for one test."""
    with ForgeServer() as forge:
        yield forge


@pytest.fixture
def forge_server(server: ForgeServer) -> ForgeServer:
    """The same local forge as `server`, under the name some tests give it."""
    return server


@pytest.fixture
def repo(server: ForgeServer) -> RepoState:
    """`acme/widgets` on the local forge, its `main` at one root commit."""
    state = server.state.repo(REPO)
    state.branches["main"] = state.add_commit("root")
    return state


@pytest.fixture
def green_pr(repo: RepoState) -> GreenPr:
    """Return `build(*, required=("ci",), strict=False, conclusion="success") -> head sha`.

    It opens PR #1 from `feature` at a new commit on `main`, has a ruleset require `required`
    (none when empty), and reports `ci` with `conclusion` on the head (no run when None).
    """

    def build(
        *,
        required: Sequence[str] = ("ci",),
        strict: bool = False,
        conclusion: str | None = "success",
    ) -> str:
        head = repo.add_commit("head", parents=[repo.branches["main"]])
        repo.add_pr(1, head_ref="feature", head_sha=head)
        if required:
            repo.set_rulesets("main", list(required), strict=strict)
        if conclusion is not None:
            repo.add_run(head, "ci", conclusion)
        return head

    return build


@pytest.fixture
def open_pr() -> OpenPr:
    """Return `pull_request`: `build(head, **fields)`, PR #1 open and clean into `main`."""
    return pull_request


@pytest.fixture
def green_fake(open_pr: OpenPr) -> GreenFake:
    """Return `build(head="a" * 40) -> FakeForge`: `open_pr(head)` on the in-memory fake, a
    ruleset requiring `ci` on `main`, and `ci` green (GitHub Actions) on the head."""

    def build(head: str = "a" * 40) -> FakeForge:
        fake = fake_forge()
        fake.add_pr(REPO, open_pr(head))
        fake.set_rulesets(REPO, "main", RequiredChecks(contexts=(RequiredContext(context="ci"),)))
        run = check_run("ci", head_sha=head)
        fake.set_runs(head, [run])
        return fake

    return build


@pytest.fixture
def forge_cli() -> ForgeCli:
    """Return `run(server, *args)`: forge-cli run as a subprocess, its gh talking to `server`."""

    def run(server: ForgeServer, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [FORGE_CLI, *args],
            capture_output=True,
            text=True,
            env={**os.environ, **server.env()},
            timeout=180,
            check=False,
        )

    return run
