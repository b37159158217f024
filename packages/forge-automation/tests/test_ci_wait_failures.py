"""ci_wait on a failed read: only a transient failure is polled again; the rest fail at once.

A page cap and a malformed answer give the same answer when read again, so waiting out the
deadline only hides them. Every ForgeCliError carries its kind from where it was raised: there is
no default that could make a permanent failure look transient.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from fakeforge import ForgeServer, GhFaults
from forge_automation import (
    ACTIONS_APP_ID,
    CheckRun,
    ForgeCliError,
    ForgeWire,
    Page,
    RateBudget,
    RequiredContext,
    ci_wait,
    fake_forge,
    forge_port,
)

REPO = "acme/widgets"
SHA = "a" * 40
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))


class _EndlessCheckRuns:
    """A wire whose check-run listing always says there is another page."""

    def __init__(self) -> None:
        self.forge = fake_forge()
        self.pages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.forge.wire, name)

    def list_check_runs(self, repo: str, sha: str, page: int, *, latest: bool) -> Page[CheckRun]:
        self.pages += 1
        run = CheckRun(
            id=page,
            name=f"job{page}",
            status="in_progress",
            conclusion=None,
            app_id=ACTIONS_APP_ID,
            head_sha=sha,
        )
        return Page(items=(run,), next_page=page + 1)


def _no_sleep(seconds: float) -> None:
    raise AssertionError(f"ci_wait slept {seconds} s before failing a permanent read")


def test_a_page_cap_fails_the_wait_at_once() -> None:
    wire = _EndlessCheckRuns()
    with pytest.raises(ForgeCliError) as caught:
        ci_wait(
            forge_port(cast(ForgeWire, wire)),
            REPO,
            SHA,
            rules=[RequiredContext(context="ci")],
            timeout=600,
            interval=1,
            sleep=_no_sleep,
            budget=RateBudget(),
        )
    assert (caught.value.kind, caught.value.transient) == ("page-cap", False)
    first_poll = wire.pages
    assert first_poll > 1  # one poll read pages up to the cap, and no second poll came


def test_a_malformed_answer_through_real_gh_fails_ci_wait_at_once(tmp_path: Path) -> None:
    faults = GhFaults(tmp_path / "faults")
    faults.add("/check-runs", "truncated")
    with ForgeServer() as server:
        repo = server.state.repo(REPO)
        repo.branches["main"] = head = repo.add_commit("root")
        repo.set_rulesets("main", ["ci"])
        done = subprocess.run(
            [FORGE_CLI, "ci-wait", REPO, head, "--timeout", "600", "--interval", "0.2"],
            capture_output=True,
            text=True,
            env={**os.environ, **server.env(), **faults.env()},
            timeout=120,
            check=False,
        )
    assert done.returncode != 0, done.stdout
    assert "cannot read" in done.stderr or "not JSON" in done.stderr, done.stderr
    # Exactly one poll: the malformed answer was not read again until the 600 s deadline.
    assert len(faults.hits()) == 1, faults.hits()


def test_a_transient_failure_is_polled_again() -> None:
    forge = fake_forge()
    forge.set_runs(
        SHA,
        [
            CheckRun(
                id=1,
                name="ci",
                status="completed",
                conclusion="success",
                app_id=ACTIONS_APP_ID,
                head_sha=SHA,
            )
        ],
    )
    wire = forge.wire
    failed = [False]

    class _OneBadGateway:
        def __getattr__(self, name: str) -> Any:
            return getattr(wire, name)

        def list_check_runs(self, *args: Any, **kwargs: Any) -> Page[CheckRun]:
            if not failed[0]:
                failed[0] = True
                raise ForgeCliError("gh api failed with HTTP 502", status=502, kind="server")
            return wire.list_check_runs(*args, **kwargs)

    slept: list[float] = []
    result = ci_wait(
        forge_port(cast(ForgeWire, _OneBadGateway())),
        REPO,
        SHA,
        rules=[RequiredContext(context="ci")],
        timeout=600,
        interval=1,
        sleep=slept.append,
        budget=RateBudget(),
    )
    assert (result.verdict, result.polls, slept) == ("green", 2, [1])


def test_a_forge_cli_error_without_a_kind_is_refused() -> None:
    with pytest.raises(TypeError):
        ForgeCliError("no kind")  # type: ignore[call-arg]
