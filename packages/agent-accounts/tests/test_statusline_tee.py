"""`account-cli statusline-tee`: the agent client's status-line payloads (tests/data) become
session readings that `status` and `poll --max-age` see, then reach the user's own status line.

Every run is a real subprocess fed a documented payload on stdin. Checked on each: no traceback,
no canary on stdout or stderr, and stderr lines only from the tee's fixed templates.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts_support import (
    CANARY,
    account_cli,
    add_profile,
    make_profile,
)
from agent_accounts.io import read_usage, write_session_reading

DATA = Path(__file__).resolve().parent / "data"
PAYLOAD = DATA / "statusline_payload.json"
BEFORE_FIRST_ANSWER = DATA / "statusline_before_first_answer.json"
LIMIT_HIT = DATA / "statusline_limit_hit.json"
SESSION = "3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b"
TEE_LINE = re.compile(
    r"account-cli: statusline-tee: (input is not a status-line JSON object"
    r"|rate_limits holds no usable window|session_id missing or unusable"
    r"|no config dir \(AGENT_CONFIG_DIR or ~/\.agent\)|session reading not written"
    r"|input over 256 KiB, not read)"
)


@dataclass
class Tee:
    code: int
    out: str
    err: str


def run(
    agent_home: Path,
    stdin: bytes,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Tee:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    base["HOME"] = str(agent_home)
    done = subprocess.run(
        [account_cli(), "statusline-tee", *args],
        input=stdin,
        env={**base, **(env or {})},
        capture_output=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )
    result = Tee(done.returncode, done.stdout.decode(), done.stderr.decode())
    assert "Traceback" not in result.out + result.err
    assert CANARY not in result.out + result.err
    for line in result.err.splitlines():
        assert TEE_LINE.fullmatch(line), line
    return result


def payload(path: Path = PAYLOAD, **changes: Any) -> bytes:
    doc = json.loads(path.read_bytes())
    doc.update(changes)
    return json.dumps(doc).encode()


@pytest.fixture
def agent_home(home_dir: Path) -> Path:
    """A HOME whose default account (`.agent`) holds a login valid for a day."""
    add_profile(home_dir, ".agent", now=time.time())
    return home_dir


def sessions(agent_home: Path, name: str = ".agent") -> Path:
    return agent_home / name / "status-cache" / "sessions"


def test_fixtures_have_the_documented_shape() -> None:
    doc = json.loads(PAYLOAD.read_bytes())
    assert 2048 <= len(PAYLOAD.read_bytes()) <= 2300  # the benchmark's 2 KiB
    assert doc["hook_event_name"] == "Status"
    assert set(doc["rate_limits"]) == {"five_hour", "seven_day"}
    assert set(doc["rate_limits"]["five_hour"]) == {"used_percentage", "resets_at"}
    assert "rate_limits" not in json.loads(BEFORE_FIRST_ANSWER.read_bytes())


def test_a_payload_becomes_a_session_reading_that_status_shows(agent_home: Path) -> None:
    result = run(agent_home, PAYLOAD.read_bytes(), "--format", "pipe")
    assert (result.code, result.err) == (0, "")
    # With no --then, the tee prints the status line itself, from the reading just kept (here
    # the spec's pipe rows; test_humanline.py has the human line, the default).
    assert result.out.splitlines()[0].startswith("23|41|1893456000|1893888000|||||")
    file = sessions(agent_home) / f"{SESSION}.json"
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    stored = json.loads(file.read_bytes())
    assert stored["session_id"] == "statusline.3f2a9c1e"
    assert stored["source"] == "statusline"
    assert stored["account"] == "default"
    assert stored["rate_limits"] == {
        "five_hour": {"used_percentage": 23.5, "resets_at": 1893456000},
        "seven_day": {"used_percentage": 41.2, "resets_at": 1893888000},
    }
    assert [p.name for p in sessions(agent_home).iterdir()] == [f"{SESSION}.json"]  # no temp left

    status = subprocess.run(
        [account_cli(), "status", "--json"],
        env={**os.environ, "HOME": str(agent_home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    usage = json.loads(status.stdout)["profiles"][0]["usage"]
    assert usage["rate_limits"]["five_hour"]["used_percentage"] == 23.5
    assert usage["age_seconds"] <= 60


def test_then_gets_the_same_bytes_and_its_exit_code_is_the_tees(
    agent_home: Path, tmp_path: Path
) -> None:
    raw = PAYLOAD.read_bytes()
    copy = tmp_path / "copy.json"
    result = run(agent_home, raw, "--then", f"cat > {copy}; echo 'my line'; exit 3")
    assert (result.code, result.out, result.err) == (3, "my line\n", "")
    assert copy.read_bytes() == raw
    assert (sessions(agent_home) / f"{SESSION}.json").exists()
    assert run(agent_home, raw, f"--then=cat > {copy}").code == 0


def test_a_payload_without_rate_limits_writes_nothing_and_says_nothing(agent_home: Path) -> None:
    result = run(agent_home, BEFORE_FIRST_ANSWER.read_bytes())
    assert (result.code, result.err) == (0, "")
    assert result.out == "no usage reading yet\n"
    assert not sessions(agent_home).exists()


def test_a_limit_reported_past_100_is_kept_as_100(agent_home: Path) -> None:
    assert run(agent_home, LIMIT_HIT.read_bytes()).err == ""
    usage = read_usage(agent_home / ".agent")
    assert usage is not None
    assert usage.reading["rate_limits"]["five_hour"]["used_percentage"] == 100
    assert usage.reading["rate_limits"]["seven_day"]["used_percentage"] == 96.4


@pytest.mark.parametrize(
    ("stdin", "problem"),
    [
        (b"", "input is not a status-line JSON object"),
        (b"not json", "input is not a status-line JSON object"),
        (b'["an", "array"]', "input is not a status-line JSON object"),
        (b"\xff\xfe{}", "input is not a status-line JSON object"),
        (b"[" * 100_000, "input is not a status-line JSON object"),
        (payload(rate_limits="full"), "input is not a status-line JSON object"),
        (payload(rate_limits={"five_hour": {"used_percentage": "x"}}), "rate_limits holds no "),
        (payload(rate_limits={"Five Hour": {"used_percentage": 5}}), "rate_limits holds no "),
        (payload(session_id=None), "session_id missing or unusable"),
        (payload(session_id=""), "session_id missing or unusable"),
        (payload(session_id="x" * 129), "session_id missing or unusable"),
        (payload(session_id="usage-poll"), "session_id missing or unusable"),
        (payload(session_id=f"sk-ant-oat01-{CANARY}abc"), "session_id missing or unusable"),
        (payload(session_id=f"eyJhbGciOi.{CANARY}"), "session_id missing or unusable"),
    ],
)
def test_bad_input_gets_one_fixed_line_and_the_status_line_still_prints(
    agent_home: Path, tmp_path: Path, stdin: bytes, problem: str
) -> None:
    poll_file = sessions(agent_home) / "usage-poll.json"
    poll_file.parent.mkdir(parents=True)
    poll_file.write_text('{"session_id": "usage-poll", "written_at": 1, "rate_limits": {}}')
    before = poll_file.read_bytes()
    result = run(agent_home, stdin)
    assert result.code == 0
    assert result.err.startswith(f"account-cli: statusline-tee: {problem}")
    assert result.out == "no usage reading yet\n"
    assert sorted(p.name for p in sessions(agent_home).iterdir()) == ["usage-poll.json"]
    assert poll_file.read_bytes() == before  # the poller's reading is never the tee's to write
    # With --then, the user's status line still runs on the very same bytes.
    copy = tmp_path / "copy"
    result = run(agent_home, stdin, "--then", f"cat > {copy}")
    assert result.code == 0
    assert copy.read_bytes() == stdin
    copy.unlink()  # the user's command got the payload as given, canary and all: not ours


def hashed(session_id: str, cleaned: str) -> str:
    """The file name of an id that needs cleaning: cleaned, then `~` and 16 hex of its SHA-256."""
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{cleaned}~{digest[:16]}.json"


@pytest.mark.parametrize(
    ("session_id", "cleaned"),
    [
        ("../../../escape", "_________escape"),
        ("/etc/passwd", "_etc_passwd"),
        (".hidden", "_hidden"),
        ("a.json", "a_json"),
        ("..", "__"),
        ("line\nbreak", "line_break"),
        ("Ωmega", "_mega"),
    ],
)
def test_a_session_id_never_leaves_the_sessions_dir(
    agent_home: Path, session_id: str, cleaned: str
) -> None:
    file = hashed(session_id, cleaned)
    before = set(agent_home.parent.rglob("*"))
    assert run(agent_home, payload(session_id=session_id)).err == ""
    created = set(agent_home.parent.rglob("*")) - before
    assert sessions(agent_home) / file in created
    history = sessions(agent_home).parent / "usage-history.jsonl"  # a fixed name, beside the dir
    assert all(
        p == sessions(agent_home)
        or p.is_relative_to(sessions(agent_home))
        or p in sessions(agent_home).parents
        or p == history
        for p in created
    )
    stored = json.loads((sessions(agent_home) / file).read_bytes())
    assert re.fullmatch(r"[a-z0-9._]{1,24}", stored["session_id"])


def test_ids_that_clean_to_the_same_text_get_their_own_files(agent_home: Path) -> None:
    ids = ["a\nb", "a\0b", "a b", "a_b"]
    for index, session_id in enumerate(ids):
        limits = {"five_hour": {"used_percentage": index}, "seven_day": {"used_percentage": 1}}
        assert run(agent_home, payload(session_id=session_id, rate_limits=limits)).err == ""
    stored = {p.name: json.loads(p.read_bytes()) for p in sessions(agent_home).iterdir()}
    used = {
        name: doc["rate_limits"]["five_hour"]["used_percentage"] for name, doc in stored.items()
    }
    assert sorted(used.values()) == [0, 1, 2, 3]  # four files, none overwritten
    assert used["a_b.json"] == 3  # a plain id keeps its plain name


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_two_different_ids_never_share_a_file(first: str, second: str) -> None:
    with tempfile.TemporaryDirectory() as config:
        try:
            paths = {write_session_reading(config, i, reading()) for i in (first, second)}
        except TypeError:
            return  # refused (token-shaped): no file at all
        assert len(paths) == (1 if first == second else 2)
        for path in paths:
            assert Path(path).parent == Path(config) / "status-cache" / "sessions"
            assert not Path(path).name.startswith(".")
            assert Path(path).name != "usage-poll.json"


def test_then_starts_with_default_sigpipe_and_sigxfsz(agent_home: Path) -> None:
    # `yes | head -1` ends quietly only when `yes` dies of SIGPIPE; with SIGPIPE ignored it
    # prints "Broken pipe" (write error) instead. /proc shows both dispositions directly.
    probe = "yes | head -1; grep SigIgn /proc/self/status"
    result = run(agent_home, payload(), "--then", probe)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "y"
    ignored = int(lines[1].split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))
    assert "Broken pipe" not in result.err


def test_no_config_dir_is_created_for_the_tee(tmp_path: Path) -> None:
    empty = tmp_path / "nobody"
    empty.mkdir()
    result = run(empty, PAYLOAD.read_bytes())
    assert result.code == 0
    assert (
        result.err == "account-cli: statusline-tee: no config dir (AGENT_CONFIG_DIR or ~/.agent)\n"
    )
    assert list(empty.iterdir()) == []


def test_agent_config_dir_names_the_current_profile(agent_home: Path) -> None:
    work, _ = make_profile(agent_home / ".agent-profiles", "work", None, seed=False)
    result = run(agent_home, PAYLOAD.read_bytes(), env={"AGENT_CONFIG_DIR": work.config_dir})
    assert result.err == ""
    stored = json.loads(
        (Path(work.config_dir) / f"status-cache/sessions/{SESSION}.json").read_bytes()
    )
    assert stored["account"] == "work"
    assert not sessions(agent_home).exists()


def test_an_unwritable_sessions_dir_is_reported_and_the_line_still_prints(agent_home: Path) -> None:
    sessions(agent_home).parent.mkdir(parents=True)
    sessions(agent_home).write_text("a file where the dir should be")
    result = run(agent_home, PAYLOAD.read_bytes())
    assert result.code == 0
    assert result.err == "account-cli: statusline-tee: session reading not written\n"
    assert result.out == "no usage reading yet\n"


def test_input_over_the_cap_is_not_parsed_but_reaches_then_whole(
    agent_home: Path, tmp_path: Path
) -> None:
    big = payload(padding="x" * (300 * 1024))
    copy = tmp_path / "copy"
    result = run(agent_home, big, "--then", f"cat > {copy}")
    assert result.err == "account-cli: statusline-tee: input over 256 KiB, not read\n"
    assert copy.read_bytes() == big
    assert not sessions(agent_home).exists()


def test_then_that_does_not_read_stdin_still_ends(agent_home: Path) -> None:
    assert run(agent_home, payload(padding="x" * (200 * 1024)), "--then", "exit 0").code == 0


def test_help_and_usage_errors_go_through_the_parser(agent_home: Path) -> None:
    done = subprocess.run(
        [account_cli(), "statusline-tee", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert "--then CMD" in done.stdout
    done = subprocess.run(
        [account_cli(), "statusline-tee", "--nope"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 64
    assert done.stderr.startswith("account-cli: unrecognized arguments: --nope\n")
    done = subprocess.run(
        [account_cli(), "statusline-tee", "--then", "a", "--then", "b"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 64
    assert done.stderr.startswith("account-cli: argument --then: given twice\n")


# ---- the hot path: what the tee loads ------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["account-cli", "statusline-tee"]
    from agent_accounts.cli import main
    try:
        main()
    except SystemExit as done:
        code = done.code
    loaded = sorted(sys.modules)
    import json
    sys.stderr.write(json.dumps({"code": code, "modules": loaded}))
    """
)
HEAVY = {
    "typing",
    "dataclasses",
    "contextlib",
    "datetime",
    "subprocess",
    "asyncio",
    "httpx",
    "shutil",
    "hashlib",
    "secrets",
}


def test_the_tee_loads_no_heavy_module(agent_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "COV", "PYTHON"))}
    env["HOME"] = str(agent_home)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=PAYLOAD.read_bytes(),
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    result = json.loads(done.stderr)
    assert result["code"] == 0
    assert (sessions(agent_home) / f"{SESSION}.json").exists()
    assert HEAVY & {m.split(".")[0] for m in result["modules"]} == set()


# ---- write_session_reading: write_reading's rules for a session's file ----------------------------


def reading(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "session_id": "s1",
        "written_at": 1_800_000_000.25,
        "rate_limits": {"five_hour": {"used_percentage": 12.5, "resets_at": 1_800_003_600}},
        "source": "statusline",
    }
    doc.update(changes)
    return doc


def test_write_session_reading_writes_the_kept_fields(tmp_path: Path) -> None:
    path = write_session_reading(tmp_path, "abc", {**reading(), "extra": "dropped"})
    assert path == str(tmp_path / "status-cache/sessions/abc.json")
    assert json.loads(Path(path).read_bytes()) == reading()


@pytest.mark.parametrize(
    "bad",
    [
        reading(rate_limits={"five_hour": {"used_percentage": 101}}),
        reading(session_id=""),
        reading(written_at="now"),
        {"session_id": "s1"},
    ],
)
def test_write_session_reading_refuses_an_invalid_reading(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(TypeError, match=r"^reading must be a valid usage reading$"):
        write_session_reading(tmp_path, "abc", bad)
    assert not (tmp_path / "status-cache").exists()


def test_write_session_reading_refuses_secret_shaped_text(tmp_path: Path) -> None:
    secret = reading(account=f"sk-ant-oat01-{CANARY}xyz")
    with pytest.raises(TypeError, match=r"^reading must not carry secret-shaped text$") as caught:
        write_session_reading(tmp_path, "abc", secret)
    assert CANARY not in str(caught.value)
    assert not (tmp_path / "status-cache").exists()


def test_write_session_reading_takes_other_windows_and_text_through_the_full_check(
    tmp_path: Path,
) -> None:
    odd = reading(
        session_id="Has Space",
        rate_limits={"new_window": {"used_percentage": 1}},
        written_at=10**13,
    )
    path = write_session_reading(tmp_path, "abc", odd)
    assert json.loads(Path(path).read_bytes()) == odd


@pytest.mark.parametrize("bad", [None, 5, "", "x" * 129, "usage-poll", "sk-ant-x", "eyJabc"])
def test_a_session_id_that_cannot_name_a_file_is_refused(tmp_path: Path, bad: Any) -> None:
    with pytest.raises(TypeError):
        write_session_reading(tmp_path, bad, reading())
    assert list(tmp_path.iterdir()) == []


def test_a_new_session_removes_session_readings_a_week_stale(agent_home: Path) -> None:
    directory = sessions(agent_home)
    directory.mkdir(parents=True)
    old = time.time() - 8 * 86400 - 60  # untouched for the README's 8 days
    keep = {
        "usage-poll.json": old,  # the poller's: never the tee's to remove
        "recent-session.json": time.time() - 3600,
        "notes.txt": old,
        ".hidden.json": old,
        "odd name.json": old,
    }
    for name, mtime in {**keep, "gone-1.json": old, "gone-2.json": old}.items():
        (directory / name).write_text("{}")
        os.utime(directory / name, (mtime, mtime))
    (directory / "linked.json").symlink_to(directory / "notes.txt")
    os.utime(directory / "linked.json", (old, old), follow_symlinks=False)
    assert run(agent_home, PAYLOAD.read_bytes(), "--then", "true").err == ""
    left = {p.name for p in directory.iterdir()}
    assert left == {*keep, "linked.json", f"{SESSION}.json"}
    # Only a session's first write prunes; later prompts of the same session do not list the dir.
    (directory / "gone-3.json").write_text("{}")
    os.utime(directory / "gone-3.json", (old, old))
    assert run(agent_home, PAYLOAD.read_bytes(), "--then", "true").err == ""
    assert (directory / "gone-3.json").exists()
