"""The refresh journal as users meet it: the lines real refreshes write (token-free, whole, a
change made elsewhere noticed once), planted or faulty journal files that never reach the refresh,
and `account-cli explain` telling hostile journals, refused ones and a staged logout by two real
processes. The line and cap rules themselves: tests/internal/test_journal_lines.py."""

from __future__ import annotations

import asyncio
import contextlib
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

from accounts_crash_support import (
    JOURNAL_NAME,
    ROTATED_NAME,
    Scene,
    explain_row,
    generation,
    journal_entry_line,
    journal_lines,
    new_scene,
)
from accounts_disk_support import fill_leaving, small_tmpfs
from accounts_refresh_support import (
    CANARY,
    TokenServer,
    account_cli,
    canary_token,
    credentials,
    dump,
    leftovers,
    serve_loopback,
    write_file,
)
from agent_accounts.io import Profile, refresh_if_needed

MARGIN = 600_000


def _journal_text(config: Path) -> str:
    parts = [config / ROTATED_NAME, config / JOURNAL_NAME]
    return "".join(p.read_text(errors="replace") for p in parts if p.exists())


# --- the journal a refresh writes ---------------------------------------------------------------


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    made = await new_scene(tmp_path)
    yield made
    await made.server.stop()


def entries(scene: Scene) -> list[dict[str, Any]]:
    """The journal's lines, each a whole valid one."""
    lines = journal_lines(scene.config)
    assert None not in lines, lines
    return [e for e in lines if e is not None]


def _profile(scene: Scene) -> Profile:
    return Profile(label="default", config_dir=str(scene.config))


async def test_a_refresh_journals_its_spend_and_answer_and_a_change_made_elsewhere(
    scene: Scene,
) -> None:
    result = await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "refreshed"
    new = json.loads(scene.credentials.read_bytes())["agentOauth"]
    events = entries(scene)
    assert [(e["event"], e["pid"]) for e in events] == [
        ("spend", os.getpid()),
        ("install", os.getpid()),  # the intent, named before the file is replaced
        ("refreshed", os.getpid()),
    ]
    assert events[0]["gen"] == events[1]["gen"] == events[2]["gen"] == generation(scene.original)
    assert events[1]["got"] == events[2]["got"] == generation(new["refreshToken"])
    assert events[1]["acc"] == events[2]["acc"] == generation(new["accessToken"])
    events = [events[0], events[2]]
    # Another program logs in anew; a refresh that is not due still notices it.
    other = canary_token("ort")
    write_file(
        scene.credentials,
        dump(credentials(expires_at_ms=int(time.time() * 1000) + 8 * 3_600_000, refresh=other)),
    )
    result = await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "fresh"
    last = entries(scene)[-1]
    assert (last["event"], last["prev"], last["gen"]) == (
        "changed",
        events[1]["got"],
        generation(other),
    )
    # Seen once is recorded once.
    await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert len(entries(scene)) == 4
    scene.credentials.unlink()
    await refresh_if_needed(_profile(scene), margin_ms=MARGIN, auth_url=scene.server.url)
    assert entries(scene)[-1]["event"] == "gone"
    assert CANARY not in _journal_text(scene.config)
    assert explain_row(scene.env)["verdict"] == "no-login"


async def test_a_refused_token_is_journaled_once_not_every_tick(scene: Scene) -> None:
    scene.server.valid.clear()  # the endpoint refuses the token on file
    for _ in range(3):
        result = await refresh_if_needed(
            _profile(scene), margin_ms=MARGIN, auth_url=scene.server.url
        )
        assert result.status == "failed"
    events = [(e["event"], e.get("failure"), e.get("status")) for e in entries(scene)]
    assert events == [
        ("spend", None, None),
        ("failed", "http", 400),
        ("failed", "login-required", None),
    ]
    assert explain_row(scene.env)["verdict"] == "logged-out"


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
                events = [e["event"] for e in journal_lines(config) if e is not None]
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
    good = journal_entry_line(t=time.time(), pid=99999999, proc="x", event="spend", gen="a1b2c3d4")
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
    line = journal_entry_line(t=time.time(), pid=1, proc="x", event="seen", gen="a1b2c3d4")
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
    runner, url = await serve_loopback(app)
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
        second_pid = next(e["pid"] for e in entries(scene) if e["pid"] != first.pid)

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
