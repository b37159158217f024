"""Every state file well-formed or refused: deep nesting and garbage never get past the parser.

A sessions file of 400 KB of brackets (under its 1 MiB cap) used to raise RecursionError out of
the parser: 500s with a traceback for every cookie, a sign-in that could not replace the file,
and `sessions list` exiting 70. Each state file is fuzzed here with deep nesting and garbage.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gate_support import gate_client, whoami_headers
from local_daemon import (
    SessionFileError,
    TokenFileError,
    create_daemon_auth,
    daemon_paths,
    ensure_token_file,
    list_sessions,
    mint_login_code,
    read_pid_file,
    revoke_session,
)
from local_daemon.cli import main

SESSION_ID = "A" * 22
DEEP_SESSIONS = b"[" * 400_000  # the issue's file: 400 KB of brackets


def _nested(depth: int, opener: str) -> bytes:
    closer = {"[": "]", "{": "}"}
    inner = "".join(opener[i % len(opener)] for i in range(depth))
    ends = "".join(closer[c] if c == "[" else "}" for c in reversed(inner))
    # `{` alone is not valid JSON: give every object a key so the shape is deep, not broken.
    return inner.replace("{", '{"k":').encode() + ends.encode()


deep_documents = st.builds(
    _nested, st.integers(min_value=500, max_value=60_000), st.sampled_from(["[", "{", "[{"])
)
# Deep nesting where a sessions file keeps its entries, its generation, or at the top.
deep_sessions = st.one_of(
    deep_documents,
    deep_documents.map(lambda d: b'{"format": 1, "generation": "g", "sessions": ' + d + b"}"),
    deep_documents.map(lambda d: b'{"format": 1, "generation": ' + d + b', "sessions": []}'),
    deep_documents.map(lambda d: d[: len(d) // 2]),  # cut off: unbalanced and deep
)
garbage = st.one_of(
    st.binary(max_size=4096),
    st.text(max_size=2048).map(str.encode),
    st.sampled_from([b"", b"null", b"[]", b"{}", b'{"format": 1}', b"\xff\xfe", b"NaN"]),
)
corrupt = st.one_of(deep_sessions, garbage)
_FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _write_private(path: Path, data: bytes) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(list(args))
    out, err = capsys.readouterr()
    assert isinstance(ended.value.code, int)
    return ended.value.code, out, err


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def sessions_file(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return state / "sessions.json"


@_FUZZ
@given(data=corrupt)
@example(data=DEEP_SESSIONS)
def test_a_corrupt_sessions_file_is_refused_everywhere(
    data: bytes,
    token_file: Path,
    sessions_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    auth = create_daemon_auth(token_file, sessions_file=sessions_file)
    cookie = auth.issue_session_cookie()
    _write_private(sessions_file, data)
    with pytest.raises(SessionFileError) as refused:
        list_sessions(sessions_file)
    assert refused.value.problem == "malformed"
    for args in (["list"], ["revoke", cookie.split(".")[2]]):
        code, out, err = _cli(capsys, "sessions", *args, "--sessions-file", str(sessions_file))
        assert (code, out) == (78, "")
        assert err in {
            f"local-daemon: sessions file {sessions_file} {what} (problem: malformed)\n"
            for what in ("is not a sessions file of this daemon", "holds a malformed entry")
        }
    with pytest.raises(SessionFileError):
        revoke_session(sessions_file, SESSION_ID)
    # The cookie is refused, not an error; the next sign-in replaces the file.
    assert auth.verify_session_cookie(cookie) is None
    fresh = auth.issue_session_cookie()
    assert [s.id for s in list_sessions(sessions_file)] == [fresh.split(".")[2]]
    assert auth.verify_session_cookie(fresh) is not None


@pytest.mark.parametrize(
    "data",
    [DEEP_SESSIONS, b"{" * 400_000, _nested(100_000, "[{")],
    ids=["brackets", "braces", "deep-document"],
)
async def test_over_http_a_deep_sessions_file_is_401_and_the_sign_in_replaces_it(
    data: bytes, token_file: Path, sessions_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    auth = create_daemon_auth(token_file, sessions_file=sessions_file)
    cookie = auth.issue_session_cookie()
    _write_private(sessions_file, data)
    caplog.set_level(logging.DEBUG)
    async with gate_client(auth) as client:
        resp = await client.post("/rpc/whoami", data=b"{}", headers=whoami_headers(cookie))
        assert resp.status == 401
        login = {"json": {"code": mint_login_code(token_file)}, "headers": {"x-local-client": "t"}}
        resp = await client.post("/auth/login", **login)  # type: ignore[arg-type]
        assert resp.status == 200
        fresh = resp.cookies["local_session"].value
        resp = await client.post("/rpc/whoami", data=b"{}", headers=whoami_headers(fresh))
        assert resp.status == 200
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert "RecursionError" not in caplog.text


@_FUZZ
@given(data=st.one_of(deep_documents.filter(lambda d: len(d) <= 4096), garbage))
@example(data=b"-")  # a byte that is also in the path: the text must still be the fixed one
def test_a_corrupt_token_file_is_refused(data: bytes, tmp_path: Path) -> None:
    token = tmp_path / "token"
    _write_private(token, data)
    stripped = data.rstrip(b"\r\n")
    problem: str | None = None
    try:
        ensure_token_file(token)
    except TokenFileError as exc:
        problem, text = exc.problem, str(exc)
    if problem is None:  # garbage that is 32 bytes or more of base64url is a secret
        assert len(stripped) >= 43
        return
    # A fixed text: nothing of the file's bytes in it.
    assert (problem, text) in {
        ("empty", f"token file {token} is empty"),
        ("not_base64url", f"token file {token} is not base64url text"),
        ("too_short", f"token file {token} holds fewer than 32 bytes of secret"),
    }


small_deep = deep_sessions.filter(lambda d: len(d) <= 65536)
# Opened and never closed: no parser reads it, however deep it lets itself go first.
unclosed = st.builds(
    lambda n, opener: opener * n,
    st.integers(min_value=2000, max_value=10_000),
    st.sampled_from([b"[", b'{"k":', b'[{"k":']),
)


@_FUZZ
@given(pid=st.one_of(small_deep, garbage), meta=st.one_of(small_deep, garbage), deep=unclosed)
def test_corrupt_pid_and_meta_files_are_refused(
    pid: bytes, meta: bytes, deep: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = daemon_paths(tmp_path / "state")
    paths.state_dir.mkdir(mode=0o700, exist_ok=True)
    _write_private(paths.pid_file, pid)
    _write_private(paths.meta_file, meta)
    found = read_pid_file(paths)
    assert found is None or found == int(pid.strip())
    # 69: no daemon there (no live pid, metadata naming another); 78: a file refused.
    for pid_text in (pid, f"{os.getpid()}\n".encode()):
        _write_private(paths.pid_file, pid_text)
        code, out, err = _cli(capsys, "health", "--state-dir", str(paths.state_dir))
        assert (code in (69, 78), out) == (True, ""), err
        assert err.startswith("local-daemon: ")
        assert err.count("\n") == 1
    # With a live pid, a deeply nested metadata file is refused with its fixed text.
    _write_private(paths.meta_file, deep)
    code, out, err = _cli(capsys, "health", "--state-dir", str(paths.state_dir))
    assert (code, out) == (78, "")
    assert err == f"local-daemon: {paths.meta_file} is not a JSON object\n"
