"""Hostile inputs at the I/O edges: compressed and bomb bodies, nested JSON, odd usage dirs.

The backoff file's pure transitions and parsing are white-box: tests/internal/test_backoff_file.py.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import time
import zlib
from pathlib import Path

import pytest
from aiohttp import web

from accounts_support import (
    CANARY,
    NOW,
    UsageServer,
    account_cli,
    env_without_profiles,
    exception_text,
    make_profile,
    reading,
    seed_credentials,
    usage_body,
)
from agent_accounts import LoginRefused
from agent_accounts.io import PollFailed, PollOk, Profile, poll_usage, read_login_state, read_usage

CAP = 64 * 1024


pytestmark = pytest.mark.usefixtures("no_leaks")


def encoded(body: bytes, encoding: str) -> web.Response:
    """A 200 whose body is already encoded (aiohttp sends it as given, with the header)."""
    return web.Response(
        body=body,
        headers={"content-encoding": encoding, "content-type": "application/json"},
    )


def deflate_raw(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


# --- compressed bodies --------------------------------------------------------------------------


async def test_identity_is_asked_for(server: UsageServer, work: tuple[Profile, str]) -> None:
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert isinstance(result, PollOk)
    assert server.requests[0]["accept-encoding"] == "identity"


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", deflate_raw),
        ("identity", lambda b: b),
    ],
    ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "identity"],
)
async def test_a_server_that_compresses_anyway_is_decoded(
    server: UsageServer, work: tuple[Profile, str], encoding: str, encode: object
) -> None:
    assert callable(encode)
    payload = encode(json.dumps(usage_body(five=12.5)).encode())

    async def answer(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return encoded(payload, encoding)

    server.handler = answer
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert isinstance(result, PollOk)
    assert result.reading["rate_limits"]["five_hour"]["used_percentage"] == 12.5


async def test_a_gzip_bomb_is_malformed_without_inflating_it(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    # 20 KiB on the wire, 20 MiB decoded: under the wire cap, far over the decoded one.
    bomb = gzip.compress(b"{" + b" " * (20 * 1024 * 1024) + b"}")
    assert len(bomb) < CAP

    async def answer(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return encoded(bomb, "gzip")

    server.handler = answer
    result = await poll_usage(work[0], now=NOW, api_base=server.url)
    assert result == PollFailed(failure="malformed")


async def test_a_body_decoding_to_exactly_64_kib_is_read(
    server: UsageServer, work: tuple[Profile, str]
) -> None:
    text = json.dumps(usage_body()).encode()
    padded = text[:-1] + b" " * (CAP - len(text)) + b"}"
    assert len(padded) == CAP

    async def answer(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return encoded(gzip.compress(padded), "gzip")

    server.handler = answer
    assert isinstance(await poll_usage(work[0], now=NOW, api_base=server.url), PollOk)


@pytest.mark.parametrize(
    ("encoding", "payload"),
    [
        ("br", b"\x0b\x02\x80{}\x03"),
        ("gzip", b"not gzip at all"),
        ("deflate", b"not deflate at all"),
        ("gzip, gzip", gzip.compress(gzip.compress(b"{}"))),
    ],
    ids=["brotli-not-asked-for", "bad-gzip", "bad-deflate", "chained"],
)
async def test_an_encoding_that_cannot_be_undone_is_malformed(
    server: UsageServer, work: tuple[Profile, str], encoding: str, payload: bytes
) -> None:
    async def answer(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return encoded(payload, encoding)

    server.handler = answer
    assert await poll_usage(work[0], now=NOW, api_base=server.url) == PollFailed(
        failure="malformed"
    )


# --- JSON that the parser cannot take -----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 60_000,
        b'{"five_hour": {"utilization": NaN, "resets_at": null}}',
        b'{"five_hour": {"utilization": Infinity, "resets_at": null}}',
        b'{"five_hour": {"utilization": 1e999, "resets_at": null}}',
        b"\xff\xfe{}",
    ],
    ids=["nested", "nan", "infinity", "overflow", "not-utf8"],
)
async def test_bodies_the_parser_cannot_take_are_malformed(
    server: UsageServer, work: tuple[Profile, str], body: bytes
) -> None:
    async def answer(request: web.Request, srv: UsageServer) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    server.handler = answer
    assert await poll_usage(work[0], now=NOW, api_base=server.url) == PollFailed(
        failure="malformed"
    )


def test_nested_brackets_in_credentials_are_malformed(tmp_path: Path) -> None:
    seed_credentials(tmp_path, b"[" * 60_000)
    assert read_login_state(tmp_path, now=NOW) == LoginRefused(reason="malformed")


def sessions(config: Path) -> Path:
    path = config / "status-cache" / "sessions"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_nested_brackets_in_a_session_file_are_skipped(tmp_path: Path) -> None:
    folder = sessions(tmp_path)
    (folder / "hostile.json").write_bytes(b"[" * 200_000)
    (folder / "usage-poll.json").write_text(json.dumps(reading(NOW - 5)))
    found = read_usage(tmp_path, now=NOW)
    assert found is not None
    assert found.file == str(folder / "usage-poll.json")
    assert found.age_seconds == 5


# --- read_usage at the edges --------------------------------------------------------------------


def test_a_status_cache_that_is_a_file_gives_none(tmp_path: Path) -> None:
    (tmp_path / "status-cache").write_text("not a dir")
    assert read_usage(tmp_path, now=NOW) is None


def test_a_sessions_dir_reached_through_a_dir_symlink_is_listed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "usage-poll.json").write_text(json.dumps(reading(NOW)))
    (tmp_path / "config" / "status-cache").mkdir(parents=True)
    (tmp_path / "config" / "status-cache" / "sessions").symlink_to(elsewhere)
    # listdir follows the dir link, but every file is opened no-follow through the gate; the
    # files themselves are regular, so the reading is found: the link rule is for files only.
    found = read_usage(tmp_path / "config", now=NOW)
    assert found is not None


def test_windows_given_as_one_string_is_one_window(tmp_path: Path) -> None:
    folder = sessions(tmp_path)
    (folder / "a.json").write_text(json.dumps(reading(NOW - 1, windows=("seven_day",))))
    (folder / "b.json").write_text(json.dumps(reading(NOW - 9, windows=("five_hour",))))
    found = read_usage(tmp_path, now=NOW, windows="five_hour")
    assert found is not None
    assert found.file.endswith("b.json")


def test_equal_written_at_is_decided_by_name_not_by_listing_order(tmp_path: Path) -> None:
    folder = sessions(tmp_path)
    for name in ("c.json", "a.json", "b.json"):
        (folder / name).write_text(json.dumps(reading(NOW)))
    found = read_usage(tmp_path, now=NOW)
    assert found is not None
    assert found.file.endswith("a.json")


@pytest.mark.parametrize("now", [float("nan"), float("inf"), "soon", True])
def test_a_bad_now_raises_value_error(tmp_path: Path, now: object) -> None:
    with pytest.raises(ValueError, match=r"^now must be a finite number of epoch seconds$"):
        read_usage(tmp_path, now=now)  # type: ignore[arg-type]


def test_an_unexpected_listing_error_raises_redacted_without_a_chain(tmp_path: Path) -> None:
    # A path component over NAME_MAX: listdir fails with ENAMETOOLONG, quoting the path.
    config = tmp_path / (f"sk-ant-oat01-{CANARY}" + "a" * 300)
    with pytest.raises(OSError) as caught:
        read_usage(config, now=NOW)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None
    assert CANARY not in exception_text(caught.value)


@pytest.mark.parametrize(
    "base",
    [
        f"http://127.0.0.1:{CANARY}",
        f"https://[{CANARY}",
        f"http://user:{CANARY}@127.0.0.1",
        f"http://{CANARY}.example",
    ],
)
async def test_a_refused_base_url_error_quotes_nothing_and_chains_nothing(
    work: tuple[Profile, str], base: str
) -> None:
    with pytest.raises(ValueError) as caught:
        await poll_usage(work[0], now=NOW, api_base=base)
    assert caught.value.__context__ is None
    assert caught.value.__cause__ is None
    assert CANARY not in exception_text(caught.value)


# --- the command line never prints a token-shaped label or path -------------------------------


def run_cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the installed account-cli with HOME at `home` and no server listening."""
    full = env_without_profiles(home, AGENT_API_BASE_URL="http://127.0.0.1:9", **env)
    done = subprocess.run(
        [account_cli(), *args], env=full, capture_output=True, text=True, timeout=60, check=False
    )
    assert "Traceback" not in done.stdout + done.stderr
    assert CANARY not in done.stdout + done.stderr
    return done


def test_a_token_shaped_profile_dir_name_is_never_printed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    name = f"sk-ant-oat01-{CANARY}{'x' * 40}"
    profile, _ = make_profile(home / ".agent-profiles", name, now=time.time())
    folder = sessions(Path(profile.config_dir))
    (folder / "usage-poll.json").write_text(json.dumps(reading(time.time() - 3)))

    status = run_cli(home, "status")
    assert (status.returncode, status.stderr) == (0, "")
    assert "[REDACTED]: login present; five_hour 10%, seven_day 10%" in status.stdout

    as_json = json.loads(run_cli(home, "status", "--json").stdout)
    assert [p["label"] for p in as_json["profiles"]] == ["[REDACTED]"]
    assert "[REDACTED]" in as_json["profiles"][0]["configDir"]

    line = run_cli(home, "status", "--statusline")
    assert line.returncode == 0
    assert line.stderr == ""
    assert line.stdout.splitlines()[1].startswith("other|[REDACTED]|10|10|")

    poll = run_cli(home, "poll")
    assert poll.returncode == 1
    assert poll.stderr == "account-cli: [REDACTED]: poll failed: network\n"


def test_unreadable_login_and_usage_are_fixed_lines_and_exit_1(tmp_path: Path) -> None:
    # A path component over NAME_MAX: every read fails with ENAMETOOLONG, quoting the path.
    config = tmp_path / (f"{CANARY}-" + "a" * 300)
    status = run_cli(tmp_path, "status", "--json", AGENT_CONFIG_DIRS=str(config))
    assert status.returncode == 1
    # The dir is why both reads failed: it is named (redacted) once, with what to do.
    problem = (
        f"config dir {tmp_path}/[REDACTED] cannot be read: File name too long "
        "(fix AGENT_CONFIG_DIRS)"
    )
    assert status.stderr == f"account-cli: [REDACTED]: {problem}\n"
    (row,) = json.loads(status.stdout)["profiles"]
    assert row["login"] == {"status": "unreadable"}
    assert row["configDirProblem"] == problem
    assert row["usage"] is None
    line = run_cli(tmp_path, "status", "--statusline", AGENT_CONFIG_DIR=str(config))
    assert (line.returncode, line.stdout, line.stderr) == (0, "unknown|unknown|||||||\n", "")
