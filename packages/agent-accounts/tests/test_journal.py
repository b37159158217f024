"""The refresh journal: token-free lines, hostile lines read back safely, a cap, faults that never
reach the refresh, and `account-cli explain` telling a staged logout by two real processes."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts_crash_support import Scene, new_scene
from accounts_refresh_support import (
    CANARY,
    TokenServer,
    account_cli,
    canary_token,
    credentials,
    dump,
    leftovers,
    write_file,
)
from agent_accounts._journal import (
    JournalEntry,
    LoginMarks,
    explain_journal,
    generation,
    journal_line,
    parse_journal_line,
)
from agent_accounts.io import Profile, refresh_if_needed
from agent_accounts.io._explain import explain_profile
from agent_accounts.io._journal import (
    JOURNAL_MAX_BYTES,
    JOURNAL_NAME,
    ROTATED_NAME,
    append_entries,
    read_journal,
)
from test_refresh_faults import fill_leaving, small_tmpfs

MARGIN = 600_000
BOUNDED = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=os.environ.get("CI") == "true",
)


def _journal_text(config: Path) -> str:
    parts = [config / ROTATED_NAME, config / JOURNAL_NAME]
    return "".join(p.read_text(errors="replace") for p in parts if p.exists())


def _no_control(text: str) -> None:
    assert all(ch == "\n" or 32 <= ord(ch) < 127 for ch in text), repr(text)


# --- the pure core ------------------------------------------------------------------------------


def test_a_generation_is_8_hex_digits_of_the_tokens_sha256() -> None:
    token = canary_token("ort")
    assert generation(token) == hashlib.sha256(token.encode()).hexdigest()[:8]
    assert CANARY not in generation(token)


def test_a_line_is_whole_ascii_json_and_reads_back_equal() -> None:
    entry = JournalEntry(
        t=1_767_225_600.5,
        pid=4242,
        proc="account-cli",
        event="failed",
        gen="a1b2c3d4",
        failure="http",
        http_status=400,
    )
    line = journal_line(entry)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert parse_journal_line(line.rstrip(b"\n")) == entry


hostile_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\x1b[31m", "\x1b]0;pwned\x07", "a1b2c3d4", "A1B2C3D4", "spend", "http"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
hostile_docs = st.dictionaries(
    st.sampled_from(
        ["t", "pid", "proc", "event", "gen", "got", "acc", "prev", "failure", "status", "rolled"]
    ),
    hostile_values,
)


@BOUNDED
@given(st.one_of(hostile_docs.map(lambda d: json.dumps(d).encode()), st.binary(max_size=600)))
def test_a_hostile_line_never_raises_and_nothing_unplain_gets_through(line: bytes) -> None:
    entry = parse_journal_line(line)
    if entry is None:
        return
    _no_control(json.dumps(entry.to_json()))
    for value in (entry.proc, entry.gen, entry.got, entry.acc, entry.prev, entry.failure):
        assert value is None or (value.isascii() and value.isprintable())
    story = explain_journal([entry], current=LoginMarks(gen="a1b2c3d4", acc=None))
    for text in (story.summary, *story.story):
        _no_control(text)


@pytest.mark.parametrize(
    "line",
    [
        b"[" * 100_000,
        b'{"t": 1767225600, "pid": 1, "event": "spend", "gen": "' + b"a" * 600 + b'"}',
        b'{"t": "1767225600", "pid": 1, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1767225600, "pid": true, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1e400, "pid": 1, "event": "spend", "gen": "a1b2c3d4"}',
        b'{"t": 1767225600, "pid": 1, "event": "spend", "gen": "a1b2c3d"}',
        b'{"t": 1767225600, "pid": 1, "event": "failed", "gen": "a1b2c3d4", "failure": "oops"}',
        b"\xff\xfe{}",
    ],
)
def test_lines_of_the_wrong_shape_are_dropped(line: bytes) -> None:
    assert parse_journal_line(line) is None


def test_a_process_name_that_is_not_plain_is_not_shown() -> None:
    line = b'{"t":1767225600,"pid":7,"proc":"\\u001b[2Jevil","event":"spend","gen":"a1b2c3d4"}'
    entry = parse_journal_line(line)
    assert entry is not None
    assert entry.proc == "a process"


def _at(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def test_a_staged_logout_is_told_in_plain_words() -> None:
    t0 = 1_767_225_600.0
    entries = [
        JournalEntry(t=t0, pid=4242, proc="account-cli", event="spend", gen="a1b2c3d4", acc="1"),
        JournalEntry(t=t0 + 60, pid=4243, proc="account-cli", event="spend", gen="a1b2c3d4"),
        JournalEntry(
            t=t0 + 61,
            pid=4243,
            proc="account-cli",
            event="failed",
            gen="a1b2c3d4",
            failure="http",
            http_status=400,
        ),
    ]
    told = explain_journal(entries, current=LoginMarks(gen="a1b2c3d4", acc=None), alive=[])
    assert told.verdict == "logged-out"
    assert told.summary == (
        f"Logged out: generation a1b2c3d4 was spent by account-cli pid 4242 at {_at(t0)} and its "
        f"answer never reached the file; at {_at(t0 + 61)} the file still held a1b2c3d4 and the "
        "token endpoint answered invalid_grant (HTTP 400). Log in again."
    )
    assert "It recorded no answer: the process ended" in told.story[0]
    assert "the file still held generation a1b2c3d4" in told.story[2]
    # The same, but the first spender still runs: no claim that it ended.
    alive = explain_journal(entries, current=LoginMarks(gen="a1b2c3d4", acc=None), alive=[4242])
    assert "still running" in alive.story[0]


@pytest.mark.parametrize(
    ("current", "verdict"),
    [
        (LoginMarks(gen="e5f6a7b8", acc="2"), "intact"),
        (LoginMarks(gen="99999999", acc="3"), "changed-elsewhere"),
        (None, "no-login"),
        ("unreadable", "unknown"),
    ],
)
def test_the_verdict_follows_the_file_as_it_is_now(current: Any, verdict: str) -> None:
    t0 = 1_767_225_600.0
    entries = [
        JournalEntry(t=t0, pid=1, proc="x", event="spend", gen="a1b2c3d4", acc="1"),
        JournalEntry(
            t=t0 + 1, pid=1, proc="x", event="refreshed", gen="a1b2c3d4", got="e5f6a7b8", acc="2"
        ),
    ]
    assert explain_journal(entries, current=current).verdict == verdict
    assert explain_journal([], current=LoginMarks(gen="a", acc=None)).verdict == "unknown"


# --- the journal a refresh writes ---------------------------------------------------------------


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    made = await new_scene(tmp_path)
    yield made
    await made.server.stop()


def _profile(scene: Scene) -> Profile:
    return Profile(label="default", config_dir=str(scene.config))


async def test_a_refresh_journals_its_spend_and_answer_and_a_change_made_elsewhere(
    scene: Scene,
) -> None:
    result = await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "refreshed"
    new = json.loads(scene.credentials.read_bytes())["agentOauth"]
    events = read_journal(str(scene.config))
    assert [(e.event, e.pid) for e in events] == [
        ("spend", os.getpid()),
        ("install", os.getpid()),  # the intent, named before the file is replaced
        ("refreshed", os.getpid()),
    ]
    assert events[0].gen == events[1].gen == events[2].gen == generation(scene.original)
    assert events[1].got == events[2].got == generation(new["refreshToken"])
    assert events[1].acc == events[2].acc == generation(new["accessToken"])
    events = [events[0], events[2]]
    # Another program logs in anew; a refresh that is not due still notices it.
    other = canary_token("ort")
    write_file(
        scene.credentials,
        dump(credentials(expires_at_ms=int(time.time() * 1000) + 8 * 3_600_000, refresh=other)),
    )
    result = await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "fresh"
    last = read_journal(str(scene.config))[-1]
    assert (last.event, last.prev, last.gen) == ("changed", events[1].got, generation(other))
    # Seen once is recorded once.
    await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert len(read_journal(str(scene.config))) == 4
    scene.credentials.unlink()
    await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert read_journal(str(scene.config))[-1].event == "gone"
    assert CANARY not in _journal_text(scene.config)
    told = explain_profile(str(scene.config))
    assert told.explanation.verdict == "no-login"


async def test_a_refused_token_is_journaled_once_not_every_tick(scene: Scene) -> None:
    scene.server.valid.clear()  # the endpoint refuses the token on file
    for _ in range(3):
        result = await refresh_if_needed(
            _profile(scene), margin_ms=MARGIN, auth_url=scene.server.url
        )
        assert result.status == "failed"
    events = [(e.event, e.failure, e.http_status) for e in read_journal(str(scene.config))]
    assert events == [
        ("spend", None, None),
        ("failed", "http", 400),
        ("failed", "login-required", None),
    ]
    assert explain_profile(str(scene.config)).explanation.verdict == "logged-out"


# --- the cap ------------------------------------------------------------------------------------


def test_the_journal_is_capped_by_rotation_and_keeps_whole_lines(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir(mode=0o700)
    entry = JournalEntry(t=1_767_225_600.0, pid=1, proc="x", event="spend", gen="a1b2c3d4")
    size = len(journal_line(entry))
    for _ in range(3 * JOURNAL_MAX_BYTES // size + 10):
        append_entries(str(config), os.getuid(), [entry])
    current = (config / JOURNAL_NAME).stat().st_size
    rotated = (config / ROTATED_NAME).stat().st_size
    assert 0 < current <= JOURNAL_MAX_BYTES
    assert JOURNAL_MAX_BYTES - size < rotated <= JOURNAL_MAX_BYTES
    assert {os.listdir(config).count(n) for n in (JOURNAL_NAME, ROTATED_NAME)} == {1}
    assert len(os.listdir(config)) == 2  # no temp file, ever
    assert len(read_journal(str(config))) == (current + rotated) // size


def test_a_line_cut_short_stays_one_bad_line(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir(mode=0o700)
    (config / JOURNAL_NAME).write_bytes(b'{"t":1767225600,"pid":1,"proc":"x","ev')
    (config / JOURNAL_NAME).chmod(0o600)
    entry = JournalEntry(t=1_767_225_601.0, pid=2, proc="x", event="spend", gen="a1b2c3d4")
    append_entries(str(config), os.getuid(), [entry])
    assert read_journal(str(config)) == [entry]


@pytest.mark.parametrize("plant", ["symlink", "hardlink", "wide", "dir"])
async def test_a_planted_journal_is_never_written_through(
    scene: Scene, tmp_path: Path, plant: str
) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"")
    target.chmod(0o600)
    journal = scene.config / JOURNAL_NAME
    if plant == "symlink":
        journal.symlink_to(target)
    elif plant == "hardlink":
        os.link(target, journal)
    elif plant == "wide":
        journal.write_bytes(b"")
        journal.chmod(0o644)
    else:
        journal.mkdir()
    result = await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "refreshed"
    assert target.read_bytes() == b""
    if plant == "wide":
        assert journal.read_bytes() == b""


# --- faults never reach the refresh -------------------------------------------------------------


@contextlib.contextmanager
def read_only_file(path: Path) -> Iterator[None]:
    """Bind-mount `path` read-only onto itself (we are root); unmount on the way out."""
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


async def test_a_read_only_journal_leaves_the_refresh_as_it_was(scene: Scene) -> None:
    journal = scene.config / JOURNAL_NAME
    journal.write_bytes(b"")
    journal.chmod(0o600)
    with read_only_file(journal):
        proc = await asyncio.create_subprocess_exec(
            account_cli(),
            "poll",
            "--write",
            "--refresh",
            env=scene.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert (proc.returncode, err) == (0, b"")
        assert b"token refreshed" in out
        assert journal.read_bytes() == b""
    assert scene.server.exchanges == 1
    new = json.loads(scene.credentials.read_bytes())["agentOauth"]["refreshToken"]
    assert new in scene.server.valid
    assert leftovers(scene.config) == []


async def test_a_full_disk_for_the_journal_leaves_the_refresh_as_it_was(tmp_path: Path) -> None:
    """Room for the refresh and nothing more: its spend line cannot be written, and the refresh
    goes as it would without a journal (fewer pages: `io`, nothing sent, as before)."""
    server = TokenServer(expires_in=3600)
    await server.start()
    try:
        for free_pages in range(3, 9):  # bounded: the refresh fits in a few pages
            with small_tmpfs(tmp_path / f"disk{free_pages}") as disk:
                config = disk / ".agent"
                config.mkdir(mode=0o700)
                token = canary_token("ort")
                server.seed(token)
                doc = credentials(expires_at_ms=int(time.time() * 1000) + 60_000, refresh=token)
                write_file(config / ".credentials.json", dump(doc))
                fill_leaving(disk, free_pages)
                profile = Profile(label="work", config_dir=str(config))
                result = await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=server.url)
                assert leftovers(config) == []
                if result.status == "failed":
                    assert getattr(result, "failure", None) == "io"
                    assert token not in server.received
                    continue
                assert result.status == "refreshed"
                assert server.received.count(token) == 1
                new = json.loads((config / ".credentials.json").read_bytes())["agentOauth"]
                assert new["refreshToken"] in server.valid
                events = [e.event for e in read_journal(str(config))]
                assert "spend" not in events  # that write failed, and changed nothing
                journal = config / JOURNAL_NAME
                raw = journal.read_bytes() if journal.exists() else b""
                assert raw == b"" or raw.endswith(b"\n")
                break
        else:
            raise AssertionError("the refresh never fitted")
    finally:
        await server.stop()


# --- explain, as users run it -------------------------------------------------------------------


async def _cli(scene: Scene, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        account_cli(),
        *args,
        env=scene.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    text, errors = out.decode(), err.decode()
    assert "Traceback" not in text + errors
    assert CANARY not in text + errors
    return proc.returncode, text, errors


async def test_explain_reads_a_hostile_journal_without_crashing_or_echoing_it(
    scene: Scene,
) -> None:
    journal = scene.config / JOURNAL_NAME
    good = journal_line(
        JournalEntry(t=time.time(), pid=99999999, proc="x", event="spend", gen="a1b2c3d4")
    )
    hostile = [
        b'{"t":1767225600,"pid":1,"proc":"\\u001b]0;pwned\\u0007","event":"spend","gen":"a1b2c3d4"}',
        b"\x1b[2J\x1b[31mred\xff\xfe",
        b"[" * 50_000,
        b'{"event":"spend","gen":"\\u001b[31m","t":1767225600,"pid":3}',
        b'{"t":1767225600,"pid":1,"event":"changed","gen":"' + CANARY.encode() + b'"}',
    ]
    journal.write_bytes(b"\n".join(hostile) + b"\n" + good)
    journal.chmod(0o600)
    code, out, err = await _cli(scene, "explain")
    assert (code, err) == (0, "")
    assert "\x1b" not in out
    assert "generation a1b2c3d4 was spent by x pid 99999999" in out
    code, out, err = await _cli(scene, "explain", "default", "--json")
    assert (code, err) == (0, "")
    assert "\\u001b" not in out
    assert "\x1b" not in out
    doc = json.loads(out)["profiles"][0]
    # The canary in a gen field is dropped with the field (the line keeps its plain fields).
    assert [e["pid"] for e in doc["journal"]] == [1, 1, 99999999]
    assert doc["journal"][0]["proc"] == "a process"
    code, _, err = await _cli(scene, "explain", "nobody")
    assert (code, err) == (2, "account-cli: no profile labelled 'nobody'\n")


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        ("symlink", "not-a-regular-file"),
        ("fifo", "not-a-regular-file"),
        ("wide", "mode-too-wide"),
        ("foreign", "foreign-owner"),
    ],
)
async def test_explain_names_a_journal_the_gate_refuses(
    scene: Scene, tmp_path: Path, plant: str, reason: str
) -> None:
    journal = scene.config / JOURNAL_NAME
    line = journal_line(JournalEntry(t=time.time(), pid=1, proc="x", event="seen", gen="a1b2c3d4"))
    target = tmp_path / "elsewhere"
    target.write_bytes(line)
    target.chmod(0o600)
    if plant == "symlink":
        journal.symlink_to(target)
    elif plant == "fifo":
        os.mkfifo(journal, 0o600)
    else:
        journal.write_bytes(line)
        journal.chmod(0o644 if plant == "wide" else 0o600)
        if plant == "foreign":
            os.chown(journal, 4242, 4242)
    code, out, err = await asyncio.wait_for(_cli(scene, "explain"), 60)  # a FIFO never hangs it
    assert (code, err) == (0, "")
    assert "No journal yet" not in out
    assert out.startswith(
        f"default: The journal cannot be read: the file gate refuses it ({JOURNAL_NAME}: {reason})."
    )
    assert "this library neither reads nor writes it" in out


def test_an_install_with_no_outcome_is_told_as_refreshed_here() -> None:
    dead = 2**31 - 1  # no such pid is alive (the caller says which are)
    spend = JournalEntry(
        t=1_767_225_600, pid=dead, proc="account-cli", event="spend", gen="aaaa0000"
    )
    intent = JournalEntry(
        t=1_767_225_601,
        pid=dead,
        proc="account-cli",
        event="install",
        gen="aaaa0000",
        got="bbbb1111",
        acc="cccc2222",
    )
    installed = LoginMarks(gen="bbbb1111", acc="cccc2222")
    told = explain_journal([spend, intent], current=installed)
    assert told.verdict == "intact"
    assert "generation bbbb1111 was refreshed here by account-cli pid" in told.summary
    assert "the process died before recording the outcome" in told.summary
    # Killed before the exchange: the answer waits in the temp file for the next run.
    before = LoginMarks(gen="aaaa0000", acc="dddd3333")
    told = explain_journal([spend, intent], current=before)
    assert told.verdict == "intact"
    assert "its answer is on disk in a temp file" in told.summary
    assert "The process died after its answer was on disk." in told.story[0]
    # Killed after the spend, nothing on disk: said as it is, never blamed on another program.
    told = explain_journal([spend], current=before)
    assert told.verdict == "unknown"
    assert "died before its answer was on disk" in told.summary
    told = explain_journal([spend], current=before, pending=["aaaa0000"])
    assert told.verdict == "intact"


# --- a staged logout: two real processes, a spent token -----------------------------------------


class HoldingTokenServer:
    """A token endpoint that spends each valid token on arrival and can hold its answer back."""

    def __init__(self, server: TokenServer) -> None:
        self.server = server
        self.hold = True
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def token(self, request: web.Request) -> web.Response:
        body = await request.json()
        token = body.get("refresh_token")
        server = self.server
        server.received.append(token)
        if token not in server.valid:
            server.rejected += 1
            return web.json_response({"error": "invalid_grant", "echo": token}, status=400)
        server.valid.discard(token)
        server.spent.add(token)
        server.exchanges += 1
        new = canary_token("ort")
        server.valid.add(new)
        if self.hold:
            self.hold = False
            self.arrived.set()
            await self.release.wait()  # the refresher is killed meanwhile: the answer is lost
        return web.json_response(
            {"access_token": canary_token("oat"), "refresh_token": new, "expires_in": 3600}
        )


@pytest.mark.slow
async def test_a_journal_that_explains_a_staged_logout(tmp_path: Path) -> None:
    """Process one spends the token and is killed before its answer arrives; process two finds
    the file still holding that token and is refused: explain names both, and when."""
    scene = await new_scene(tmp_path)
    await scene.server.stop()
    holding = HoldingTokenServer(scene.server)
    app = web.Application()
    app.router.add_post("/v1/oauth/token", holding.token)
    app.router.add_get("/api/oauth/usage", scene.server._usage)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    assert site._server is not None
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{port}"
    scene.env.update(AGENT_AUTH_URL=url, AGENT_API_BASE_URL=url)
    try:
        first = await asyncio.create_subprocess_exec(
            account_cli(),
            "poll",
            "--write",
            "--refresh",
            env=scene.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.wait_for(holding.arrived.wait(), 60)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        holding.release.set()
        code, _, err = await _cli(scene, "poll", "--write", "--refresh")
        assert code == 1
        assert err == "account-cli: default: token refresh failed: http-400\n"
        second_pid = next(e.pid for e in read_journal(str(scene.config)) if e.pid != first.pid)

        gen = generation(scene.original)
        code, out, err = await _cli(scene, "explain")
        assert (code, err) == (0, "")
        summary, *story = out.splitlines()
        assert summary.startswith(
            f"default: Logged out: generation {gen} was spent by account-cli pid {first.pid} at "
        )
        assert f"the file still held {gen} and the token endpoint answered invalid_grant" in summary
        assert any(
            f"generation {gen} was spent by account-cli pid {first.pid}" in line
            and "It recorded no answer: the process ended" in line
            for line in story
        )
        assert any(
            f"the file still held generation {gen}; account-cli pid {second_pid} sent it" in line
            and "(HTTP 400, invalid_grant)" in line
            for line in story
        )
        code, out, _ = await _cli(scene, "explain", "--json")
        doc = json.loads(out)["profiles"][0]
        assert doc["verdict"] == "logged-out"
        assert doc["current"] == {"status": "present", "generation": gen}
        assert [(e["event"], e["pid"]) for e in doc["journal"]] == [
            ("spend", first.pid),
            ("spend", second_pid),
            ("failed", second_pid),
        ]
        assert CANARY not in _journal_text(scene.config)
        # The user logs in again: the next poll records it as a change made elsewhere.
        fresh = canary_token("ort")
        login = credentials(expires_at_ms=int(time.time() * 1000) + 8 * 3_600_000, refresh=fresh)
        write_file(scene.credentials, dump(login))
        await _cli(scene, "poll", "--write", "--refresh")
        code, out, _ = await _cli(scene, "explain")
        assert out.startswith(
            f"default: The login is intact: the file holds generation {generation(fresh)}"
        )
        assert f"generation {gen} was replaced by {generation(fresh)}" in out
    finally:
        holding.release.set()
        await runner.cleanup()
