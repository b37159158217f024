"""Per-device sessions: the sessions file, the gate's use of it, and `local-daemon sessions`."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from daemon_raw_http import raw_request, serve_app
from gate_support import build_test_app, gate_client, whoami_headers
from local_daemon import (
    DaemonAuth,
    SessionFileError,
    create_daemon_auth,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    revoke_session,
    rotate_token_file,
)
from local_daemon.cli import main

# The spec's and the README's numbers: a session lives 30 days, its last-seen time is written at
# most once a minute, a user agent is kept to 256 characters.
SESSION_LIFETIME_SECONDS = 30 * 24 * 60 * 60
LAST_SEEN_WRITE_INTERVAL = 60.0
MAX_USER_AGENT_CHARS = 256

T0 = 1_800_000_000.0
# What gets through aiohttp's parser into a header: a bidi override (its UTF-8 bytes), a lone
# C1 byte (CSI in latin-1, a surrogate once decoded), a tab, and far too long.
WIRE_AGENT = "Evil/1.0 \x9b31m \xe2\x80\xaegnp.exe\t" + "A" * 5000
HOSTILE_AGENT = (
    "Evil/1.0 \x1b[31mred\x1b[0m \u202egnp.exe\r\nX-Injected: 1\x00\udc9b\u2028" + "A" * 5000
)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def sessions_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.json"


@pytest.fixture
def auth(token_file: Path, clock: Clock, sessions_file: Path) -> DaemonAuth:
    sessions_file.parent.mkdir(mode=0o700)
    return create_daemon_auth(token_file, clock=clock, sessions_file=sessions_file)


def _id(cookie: str) -> str:
    return cookie.split(".")[2]


def _ino(path: Path) -> int:
    return path.stat().st_ino


class TestRecord:
    def test_each_sign_in_is_one_entry_in_a_private_file(
        self, auth: DaemonAuth, sessions_file: Path, token_file: Path
    ) -> None:
        first = auth.issue_session_cookie(user_agent="Firefox/140", peer="192.0.2.20")
        second = auth.issue_session_cookie(user_agent="Chromium/131", peer="192.0.2.21")
        listed = {s.id: s for s in list_sessions(sessions_file)}
        assert set(listed) == {_id(first), _id(second)}
        one = listed[_id(first)]
        assert (one.issued_at, one.first_seen, one.last_seen) == (int(T0),) * 3
        assert (one.user_agent, one.peer) == ("Firefox/140", "192.0.2.20")
        assert stat.S_IMODE(sessions_file.stat().st_mode) == 0o600
        assert sorted(p.name for p in sessions_file.parent.iterdir()) == [
            "sessions.json",
            "sessions.json.lock",
        ]
        # Nothing of the secret is in the file: ids, times, agents and a derived generation.
        assert token_file.read_text().strip() not in sessions_file.read_text()
        assert auth.sessions_file == str(sessions_file)

    def test_default_file_sits_beside_the_token_file(self, token_file: Path) -> None:
        auth = create_daemon_auth(token_file)
        auth.issue_session_cookie()
        assert auth.sessions_file == str(token_file.parent / "token.sessions.json")
        assert len(list_sessions(auth.sessions_file)) == 1

    def test_a_cookie_the_file_does_not_list_is_refused(
        self, auth: DaemonAuth, sessions_file: Path
    ) -> None:
        cookie = auth.issue_session_cookie()
        sessions_file.unlink()
        assert auth.verify_session_cookie(cookie) is None

    def test_the_user_agent_is_cleaned_and_capped(
        self, auth: DaemonAuth, sessions_file: Path
    ) -> None:
        auth.issue_session_cookie(user_agent=HOSTILE_AGENT)
        (entry,) = list_sessions(sessions_file)
        assert len(entry.user_agent) == MAX_USER_AGENT_CHARS
        assert entry.user_agent.startswith("Evil/1.0 [31mred[0m gnp.exeX-Injected: 1AAA")
        assert all(ch.isprintable() for ch in entry.user_agent)

    def test_expired_sessions_are_dropped_at_the_next_sign_in(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock
    ) -> None:
        old = auth.issue_session_cookie()
        clock.now = T0 + SESSION_LIFETIME_SECONDS + 1
        new = auth.issue_session_cookie()
        assert [s.id for s in list_sessions(sessions_file)] == [_id(new)]
        assert _id(old) != _id(new)


class TestRevoke:
    def test_revoked_device_is_refused_while_another_keeps_working(
        self, auth: DaemonAuth, sessions_file: Path
    ) -> None:
        phone = auth.issue_session_cookie(user_agent="phone")
        laptop = auth.issue_session_cookie(user_agent="laptop")
        assert revoke_session(sessions_file, _id(phone)) is True
        assert auth.verify_session_cookie(phone) is None
        assert auth.verify_session_cookie(laptop) is not None
        assert revoke_session(sessions_file, _id(phone)) is False
        assert revoke_session(sessions_file, "not an id") is False
        assert revoke_session(sessions_file.with_name("none.json"), _id(laptop)) is False

    def test_a_last_seen_write_never_brings_back_a_revoked_session(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock
    ) -> None:
        a = auth.issue_session_cookie()
        b = auth.issue_session_cookie()
        clock.now = T0 + 30
        assert auth.verify_session_cookie(a) is not None  # a's visit is pending in memory
        revoke_session(sessions_file, _id(a))
        clock.now = T0 + LAST_SEEN_WRITE_INTERVAL + 1
        assert auth.verify_session_cookie(b) is not None  # this one writes last-seen times
        assert [s.id for s in list_sessions(sessions_file)] == [_id(b)]
        assert auth.verify_session_cookie(a) is None

    def test_rotation_ends_every_session_and_empties_the_list(
        self, auth: DaemonAuth, sessions_file: Path, token_file: Path
    ) -> None:
        cookies = [auth.issue_session_cookie() for _ in range(2)]
        rotate_token_file(token_file)
        auth.check()  # the daemon's next request
        assert list_sessions(sessions_file) == []
        assert all(auth.verify_session_cookie(c) is None for c in cookies)
        assert auth.verify_session_cookie(auth.issue_session_cookie()) is not None

    def test_a_file_from_another_secret_honours_nothing(
        self, auth: DaemonAuth, sessions_file: Path, token_file: Path, tmp_path: Path
    ) -> None:
        cookie = auth.issue_session_cookie()
        other = create_daemon_auth(
            ensure_token_file(tmp_path / "other-token"), sessions_file=sessions_file
        )
        assert other.verify_session_cookie(cookie) is None
        assert list_sessions(sessions_file) == []  # `other` cleared the old secret's entries


class TestLastSeen:
    def test_visits_write_at_most_once_a_minute(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock
    ) -> None:
        cookie = auth.issue_session_cookie()
        written = _ino(sessions_file)
        for step in range(int(LAST_SEEN_WRITE_INTERVAL)):
            clock.now = T0 + step
            for _ in range(20):
                assert auth.verify_session_cookie(cookie) is not None
        assert _ino(sessions_file) == written  # 1200 requests in a minute: no write
        clock.now = T0 + LAST_SEEN_WRITE_INTERVAL
        assert auth.verify_session_cookie(cookie) is not None
        assert _ino(sessions_file) != written
        (entry,) = list_sessions(sessions_file)
        assert entry.last_seen == int(T0 + LAST_SEEN_WRITE_INTERVAL)
        assert entry.first_seen == int(T0)
        written = _ino(sessions_file)
        clock.now = T0 + LAST_SEEN_WRITE_INTERVAL + 30
        assert auth.verify_session_cookie(cookie) is not None
        assert _ino(sessions_file) == written

    def test_a_held_lock_skips_the_write_and_keeps_serving(
        self, auth: DaemonAuth, sessions_file: Path, clock: Clock
    ) -> None:
        cookie = auth.issue_session_cookie()
        written = _ino(sessions_file)
        with _held_lock(sessions_file):
            clock.now = T0 + LAST_SEEN_WRITE_INTERVAL
            assert auth.verify_session_cookie(cookie) is not None
        assert _ino(sessions_file) == written


def _held_lock_fd(sessions_file: Path) -> int:
    fd = os.open(f"{sessions_file}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


class _held_lock:
    def __init__(self, sessions_file: Path) -> None:
        self._path = sessions_file

    def __enter__(self) -> None:
        self._fd = _held_lock_fd(self._path)

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)


BAD_FILES = {
    "symlink": "symlink",
    "mode 0644": "mode",
    "fifo": "not_regular",
    "not json": "malformed",
    "wrong shape": "malformed",
    "bad entry": "malformed",
}


def _make_bad(kind: str, path: Path, good: str) -> None:
    path.unlink()
    if kind == "symlink":
        target = path.with_name("elsewhere.json")
        target.write_text(good)
        target.chmod(0o600)
        path.symlink_to(target)
        return
    if kind == "fifo":
        os.mkfifo(path, 0o600)
        return
    text = {
        "mode 0644": good,
        "not json": '{"format": 1, "sessions": [',
        "wrong shape": json.dumps({"format": 1, "generation": 7, "sessions": {}}),
        "bad entry": json.dumps(
            {"format": 1, "generation": "x", "sessions": [{"id": "../../etc/passwd"}]}
        ),
    }[kind]
    path.write_text(text)
    path.chmod(0o644 if kind == "mode 0644" else 0o600)


class TestUnsafeFile:
    @pytest.mark.parametrize("kind", sorted(BAD_FILES))
    def test_refused_file_honours_no_cookie_and_logs_once(
        self,
        auth: DaemonAuth,
        sessions_file: Path,
        token_file: Path,
        caplog: pytest.LogCaptureFixture,
        kind: str,
    ) -> None:
        cookie = auth.issue_session_cookie()
        _make_bad(kind, sessions_file, sessions_file.read_text())
        caplog.set_level(logging.INFO, logger="local_daemon")
        assert auth.verify_session_cookie(cookie) is None
        assert auth.verify_session_cookie(cookie) is None
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1
        assert "no session cookie is honoured" in errors[0].getMessage()
        assert token_file.read_text().strip() not in caplog.text
        with pytest.raises(SessionFileError) as raised:
            list_sessions(sessions_file)
        assert raised.value.problem == BAD_FILES[kind]
        # A revocation leaves such a file alone; a sign-in replaces it with a good one.
        if kind != "fifo":
            with pytest.raises(SessionFileError):
                revoke_session(sessions_file, _id(cookie))
        fresh = auth.issue_session_cookie()
        assert not sessions_file.is_symlink()
        assert [s.id for s in list_sessions(sessions_file)] == [_id(fresh)]
        assert auth.verify_session_cookie(fresh) is not None


@pytest.fixture
async def port(token_file: Path, sessions_file: Path) -> AsyncIterator[int]:
    sessions_file.parent.mkdir(mode=0o700)
    real_clock = create_daemon_auth(token_file, sessions_file=sessions_file)
    async with serve_app(build_test_app(real_clock)) as bound:
        yield bound


async def _sign_in(port: int, token_file: Path, agent: str) -> str:
    """Sign in over a raw socket, the user agent sent byte for byte (latin-1 on the wire)."""
    body = json.dumps({"code": mint_login_code(token_file)}).encode()
    resp = await raw_request(
        port,
        "POST",
        "/auth/login",
        headers={"Content-Type": "application/json", "x-local-client": "t", "User-Agent": agent},
        body=body,
    )
    assert resp.status == 200
    return resp.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]


class TestOverHttp:
    async def test_sign_in_records_the_agent_and_peer_and_revocation_is_401(
        self, port: int, token_file: Path, sessions_file: Path
    ) -> None:
        phone = await _sign_in(port, token_file, "PhoneBrowser/1")
        laptop = await _sign_in(port, token_file, WIRE_AGENT)
        listed = {s.id: s for s in list_sessions(sessions_file)}
        assert listed[_id(phone)].user_agent == "PhoneBrowser/1"
        assert listed[_id(phone)].peer == "127.0.0.1"
        agent = listed[_id(laptop)].user_agent
        assert len(agent) == MAX_USER_AGENT_CHARS
        assert agent.startswith("Evil/1.0 31m gnp.exeAAA")
        assert all(ch.isprintable() for ch in agent)
        revoke_session(sessions_file, _id(phone))
        for cookie, status in ((phone, 401), (laptop, 200)):
            resp = await raw_request(
                port, "POST", "/rpc/whoami", headers=whoami_headers(cookie), body=b"{}"
            )
            assert resp.status == status

    async def test_a_sign_in_that_cannot_be_recorded_is_503_and_the_code_stays_good(
        self, token_file: Path, tmp_path: Path
    ) -> None:
        state = tmp_path / "not-yet"
        auth = create_daemon_auth(token_file, sessions_file=state / "sessions.json")
        code = mint_login_code(token_file)
        async with gate_client(auth) as c:
            post = {"json": {"code": code}, "headers": {"x-local-client": "t"}}
            resp = await c.post("/auth/login", **post)  # type: ignore[arg-type]
            assert resp.status == 503
            assert "Set-Cookie" not in resp.headers
            state.mkdir(mode=0o700)
            resp = await c.post("/auth/login", **post)  # type: ignore[arg-type]
            assert resp.status == 200
            resp = await c.post("/auth/login", **post)  # type: ignore[arg-type]
            assert resp.status == 401


@pytest.fixture
def signed_in(auth: DaemonAuth, sessions_file: Path) -> list[str]:
    return [
        auth.issue_session_cookie(user_agent="Firefox/140", peer="192.0.2.20"),
        auth.issue_session_cookie(user_agent=HOSTILE_AGENT, peer="192.0.2.21"),
    ]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(list(args))
    out, err = capsys.readouterr()
    code = ended.value.code
    assert isinstance(code, int)
    return code, out, err


class TestCli:
    def test_list_shows_each_device_with_clean_agents(
        self, capsys: pytest.CaptureFixture[str], signed_in: list[str], sessions_file: Path
    ) -> None:
        code, out, err = _cli(capsys, "sessions", "list", "--state-dir", str(sessions_file.parent))
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert lines[0].split() == ["ID", "SIGNED", "IN", "LAST", "SEEN", "PEER", "USER", "AGENT"]
        assert len(lines) == 3
        assert all(_id(c) in out for c in signed_in)
        assert "2027-01-15 08:00:00Z" in out
        assert "192.0.2.20" in out
        assert "Firefox/140" in out
        assert all(ch.isprintable() for line in lines for ch in line)
        hostile = next(line for line in lines if "Evil" in line)
        assert hostile.endswith("\u2026")

    def test_list_json(
        self, capsys: pytest.CaptureFixture[str], signed_in: list[str], sessions_file: Path
    ) -> None:
        code, out, _ = _cli(
            capsys, "sessions", "list", "--sessions-file", str(sessions_file), "--json"
        )
        assert code == 0
        rows = json.loads(out)
        assert {row["id"] for row in rows} == {_id(c) for c in signed_in}
        assert set(rows[0]) == {"id", "issued_at", "first_seen", "last_seen", "user_agent", "peer"}

    def test_list_without_a_file_says_so(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        assert _cli(capsys, "sessions", "list", "--state-dir", str(tmp_path)) == (
            0,
            "no device is signed in\n",
            "",
        )

    def test_revoke_signs_out_one_device(
        self,
        capsys: pytest.CaptureFixture[str],
        signed_in: list[str],
        sessions_file: Path,
        auth: DaemonAuth,
    ) -> None:
        gone = _id(signed_in[0])
        state = str(sessions_file.parent)
        assert _cli(capsys, "sessions", "revoke", gone, "--state-dir", state) == (
            0,
            f"signed out {gone}\n",
            "",
        )
        assert auth.verify_session_cookie(signed_in[0]) is None
        assert auth.verify_session_cookie(signed_in[1]) is not None
        code, out, err = _cli(capsys, "sessions", "revoke", gone, "--state-dir", state)
        assert (code, out) == (67, "")
        assert err == (
            f"local-daemon: no signed-in device has session id {gone} in {sessions_file}\n"
        )

    def test_a_bad_id_is_a_usage_error(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        code, out, err = _cli(capsys, "sessions", "revoke", "\x1b[2J", "--state-dir", str(tmp_path))
        assert (code, out) == (64, "")
        assert err.startswith("local-daemon: ID must be a session id")
        assert "\x1b" not in err

    def test_a_refused_file_is_78_with_its_problem(
        self, capsys: pytest.CaptureFixture[str], signed_in: list[str], sessions_file: Path
    ) -> None:
        sessions_file.chmod(0o644)
        for args in (["list"], ["revoke", _id(signed_in[0])]):
            code, out, err = _cli(capsys, "sessions", *args, "--sessions-file", str(sessions_file))
            assert (code, out) == (78, "")
            assert err == (
                f"local-daemon: sessions file {sessions_file} is open to group or others "
                "(mode 0644) (problem: mode)\n"
            )

    def test_a_held_lock_is_69(
        self,
        capsys: pytest.CaptureFixture[str],
        signed_in: list[str],
        sessions_file: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        with _held_lock(sessions_file):
            code, _, err = _cli(
                capsys,
                "sessions",
                "revoke",
                _id(signed_in[0]),
                "--sessions-file",
                str(sessions_file),
            )
        assert code == 69
        assert err.endswith("is locked by another process (problem: locked)\n")

    @pytest.mark.parametrize(
        "args",
        [["sessions"], ["sessions", "list"], ["sessions", "revoke", "--state-dir", "x"]],
    )
    def test_usage_errors(self, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
        code, out, err = _cli(capsys, *args)
        assert (code, out) == (64, "")
        assert err.startswith("local-daemon: ")
        assert "usage: local-daemon sessions" in err
