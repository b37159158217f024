"""Every `account-cli` command under every supported Python this machine has, over bad files.

Each Python gets a throwaway venv (`uv venv`) with the package installed from the workspace, so
the CLI runs as a user's would: a fresh process that has imported nothing (pytest's process has
imported `json`, which hid a Python 3.11 fault of a start-up shortcut). Beside one good profile
sit profiles holding each kind of malformed file; every command must still answer for the good
one, with no traceback and no canary on any stream.

Pythons are found under `$PYENV_ROOT/versions` (default `~/.pyenv`) and on PATH as `python3.X`;
`ACCOUNTS_TEST_PYTHONS` (paths, `:`-separated) replaces that search. A supported version the
machine lacks is skipped, named in the skip reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from accounts_support import CANARY, HOUR_MS, UsageServer, credentials, dump, write_file

SUPPORTED = ("3.11", "3.12", "3.13")
PACKAGE = Path(__file__).resolve().parents[1]
GOOD_FIVE, GOOD_WEEK = 23.0, 41.5


def _version_of(python: str) -> str | None:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _find_pythons() -> dict[str, str]:
    """Map each supported version this machine has to one interpreter of it."""
    listed = os.environ.get("ACCOUNTS_TEST_PYTHONS")
    if listed:
        candidates = [p for p in listed.split(":") if p]
    else:
        root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
        candidates = [str(p) for p in sorted(root.glob("3.*/bin/python"))]
        candidates += [w for v in SUPPORTED if (w := shutil.which(f"python{v}")) is not None]
    found: dict[str, str] = {}
    for python in candidates:
        version = _version_of(python)
        if version in SUPPORTED and version not in found:
            found[version] = python
    return found


FOUND = _find_pythons()


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One venv per Python found, the package installed from the workspace (not editable)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH (make setup installs it)")
    root = tmp_path_factory.mktemp("venvs")
    made: dict[str, Path] = {}
    for version, python in FOUND.items():
        venv = root / version
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_"))}
        for argv in (
            [uv, "venv", "--quiet", "--no-project", "--python", python, str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin/python"), str(PACKAGE)],
        ):
            done = subprocess.run(
                argv, env=env, capture_output=True, text=True, timeout=300, check=False
            )
            assert done.returncode == 0, done.stderr
        made[version] = venv
    return made


@dataclass
class Run:
    code: int
    out: str
    err: str


@dataclass
class Home:
    """A HOME with one good profile (`good`) and one profile per kind of malformed file."""

    path: Path
    url: str

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "PYTHON"))}
        env.update(HOME=str(self.path), AGENT_API_BASE_URL=self.url, AGENT_AUTH_URL=self.url)
        return env


def _profile(home: Path, name: str, creds: bytes | None, reading: bytes | None) -> Path:
    config = home / ".agent-profiles" / name
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    if creds is not None:
        write_file(config / ".credentials.json", creds)
    if reading is not None:
        write_file(sessions / "usage-poll.json", reading)
    return config


def _reading(five: float, week: float) -> bytes:
    now = time.time()
    doc = {
        "session_id": "usage-poll",
        "written_at": now - 30,
        "rate_limits": {
            "five_hour": {"used_percentage": five, "resets_at": now + 3600},
            "seven_day": {"used_percentage": week, "resets_at": now + 86400},
        },
    }
    return json.dumps(doc).encode()


def _login() -> bytes:
    return dump(credentials(expires_at_ms=int(time.time() * 1000) + 24 * HOUR_MS))


# Each kind of malformed file, each in a profile of its own, beside the good profile. The bad
# profiles' readings show more headroom than the good one's, so a `best` that trusted one would
# answer wrong rather than fail.
BAD_PROFILES: dict[str, tuple[bytes | None, bytes | None]] = {
    "creds-not-json": (b"{not json", _reading(1, 1)),
    "creds-cut-short": (_login()[:40], _reading(1, 1)),
    "creds-array": (b"[1, 2]", _reading(1, 1)),
    "creds-utf16-garbage": (b"\xff\xfe{\x00", _reading(1, 1)),
    "creds-nul": (b"\0" * 16, _reading(1, 1)),
    "reading-cut-short": (_login(), _reading(1, 1)[:25]),
    "reading-not-json": (_login(), b"{not json"),
    "reading-array": (_login(), b"[]"),
    "reading-deep": (_login(), b"[" * 100_000),
    "reading-bad-utf8": (_login(), b'{"session_id": "\xff"}'),
    "no-login": (None, _reading(1, 1)),
}


@pytest.fixture
async def home(tmp_path: Path) -> AsyncIterator[Home]:
    async with UsageServer() as server:
        path = tmp_path / "home"
        _profile(path, "good", _login(), _reading(GOOD_FIVE, GOOD_WEEK))
        for name, (creds, reading) in BAD_PROFILES.items():
            _profile(path, name, creds, reading)
        # The current account (`~/.agent`) is a bad one too: the status line's first row.
        agent = path / ".agent"
        agent.mkdir(mode=0o700)
        write_file(agent / ".credentials.json", b"{not json")
        yield Home(path, server.url)


async def _run(
    venv: Path, args: list[str], home: Home, stdin: bytes = b"", module: bool = False
) -> Run:
    argv = (
        [str(venv / "bin/python"), "-m", "agent_accounts"]
        if module
        else [str(venv / "bin/account-cli")]
    )
    proc = await asyncio.create_subprocess_exec(
        *argv,
        *args,
        env=home.env(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), 120)
    assert proc.returncode is not None
    run = Run(proc.returncode, out.decode(), err.decode())
    assert "Traceback" not in run.out + run.err, run
    assert "unexpected" not in run.err, run
    assert CANARY not in run.out + run.err, run
    return run


PYTHON_PARAMS = [
    pytest.param(
        v,
        marks=() if v in FOUND else pytest.mark.skip(reason=f"Python {v} is not on this machine"),
    )
    for v in SUPPORTED
]


@pytest.mark.parametrize("version", PYTHON_PARAMS)
async def test_every_command_answers_for_the_good_profile(
    version: str, venvs: dict[str, Path], home: Home
) -> None:
    venv = venvs[version]
    good_row = f"good: five_hour {GOOD_FIVE:g}%, seven_day {GOOD_WEEK:g}%"

    run = await _run(venv, ["--version"], home)
    assert (run.code, run.err) == (0, "")
    assert run.out.startswith("account-cli 0.")
    run = await _run(venv, ["--version"], home, module=True)
    assert run.out.startswith("account-cli 0.")
    run = await _run(venv, ["-h"], home)
    assert (run.code, run.err) == (0, "")

    run = await _run(venv, ["best"], home)
    assert (run.code, run.out) == (0, "good\n"), run
    run = await _run(venv, ["best", "--json"], home)
    assert (run.code, json.loads(run.out)["label"]) == (0, "good"), run
    run = await _run(venv, ["best", "--path"], home)
    assert (run.code, run.out) == (0, f"{home.path}/.agent-profiles/good\n"), run
    # `run` ranks the same profiles (the `--` separator differs between Pythons' argparse).
    for args in (["run", "--", "sh", "-c", "echo $AGENT_CONFIG_DIR"], ["run", "printenv"]):
        run = await _run(venv, args, home)
        assert run.code == 0, run
        assert f"{home.path}/.agent-profiles/good\n" in run.out, run
        assert run.err.startswith("account-cli: run: good: most room, "), run

    run = await _run(venv, ["status", "--statusline"], home)
    assert (run.code, run.err) == (0, ""), run
    rows = run.out.splitlines()
    assert rows[0] == "unknown|unknown|||||||"
    assert any(r.startswith("other|good|23|41|") for r in rows), rows

    run = await _run(venv, ["status"], home)
    assert run.code == 2, run  # the refused and missing logins
    assert any(
        line.startswith("good: login present; five_hour 23%") for line in run.out.splitlines()
    )
    assert any(
        line.startswith("creds-not-json: login refused (malformed); ")
        for line in run.out.splitlines()
    )
    assert run.err == ""  # each problem said once, in its profile's line
    run = await _run(venv, ["status", "--json"], home)
    assert "account-cli: creds-not-json: login refused (malformed)" in run.err.splitlines()
    run = await _run(venv, ["status", "--json"], home)
    rows_json = {row["label"]: row for row in json.loads(run.out)["profiles"]}
    assert rows_json["good"]["login"]["status"] == "present"
    assert rows_json["good"]["usage"]["rate_limits"]["five_hour"]["used_percentage"] == GOOD_FIVE
    assert rows_json["reading-cut-short"]["usage"] is None

    run = await _run(venv, ["explain"], home)
    assert run.code == 0, run
    assert any(line.startswith("good: ") for line in run.out.splitlines())
    run = await _run(venv, ["explain", "good", "--json"], home)
    assert [row["label"] for row in json.loads(run.out)["profiles"]] == ["good"]

    run = await _run(venv, ["poll"], home)
    assert good_row in run.out.splitlines(), run
    assert run.code == 2, run  # the refused logins
    run = await _run(venv, ["poll", "--write", "--refresh"], home)
    assert good_row in run.out.splitlines(), run

    payload = (PACKAGE / "tests" / "data" / "statusline_payload.json").read_bytes()
    run = await _run(venv, ["statusline-tee"], home, stdin=payload)
    assert (run.code, run.err) == (0, ""), run
    run = await _run(venv, ["statusline-tee", "--then", "cat"], home, stdin=b"{bad")
    assert (run.code, run.out) == (0, "{bad"), run
    assert run.err == "account-cli: statusline-tee: input is not a status-line JSON object\n"
    run = await _run(venv, ["statusline-tee", "--format", "pipe"], home, stdin=b"{bad")
    assert run.err == "account-cli: statusline-tee: input is not a status-line JSON object\n"
    line = await _run(venv, ["status", "--statusline"], home)
    # The same row but its age, which may tick over a second between the two commands.
    same = [text.splitlines()[0].rsplit("|", 1)[0] for text in (run.out, line.out)]
    assert (run.code, same[0]) == (0, same[1])
    assert line.out.startswith("23|41|")  # the good payload the tee stored for ~/.agent
    human = await _run(venv, ["statusline", "--no-color"], home)
    assert (human.code, human.err) == (0, "")
    assert re.fullmatch(r"default 5h 23% \d+d\d*h? · 7d 41% \d+d\d*h?", human.out.splitlines()[0])

    run = await _run(venv, ["best", "--bogus"], home)
    assert (run.code, run.err.splitlines()[0]) == (
        64,
        "account-cli: unrecognized arguments: --bogus",
    )


def test_the_search_found_the_running_python() -> None:
    """The search is not empty-handed by accident: it finds at least the Python running pytest."""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert here not in SUPPORTED or here in FOUND or os.environ.get("ACCOUNTS_TEST_PYTHONS")
