"""The file gate against real files: every refusal, the swap seam, size bounds, zeroed buffers."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import threading
from pathlib import Path

import pytest

from accounts_support import (
    CANARY,
    HOUR_MS,
    NOW,
    assert_no_canary,
    canary_token,
    credentials,
    dump,
    exception_text,
    seed_credentials,
    write_file,
)
from agent_accounts import LoginMissing, LoginPresent, LoginRefused
from agent_accounts.io import _credentials, _files, _gate, read_login_state
from agent_accounts.io._gate import GateRefused, read_gated

LIMIT = 64 * 1024

# conftest's check: no log record, output or file but credentials holds the canary.
pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "home" / ".agent"
    path.mkdir(parents=True, mode=0o700)
    return path


def creds(config: Path) -> Path:
    return config / ".credentials.json"


def state(config: Path) -> object:
    result = read_login_state(config, now=NOW)
    assert_no_canary(result)
    assert CANARY not in json.dumps(dataclasses.asdict(result))
    return result


def test_present_file_reads_and_leaks_nothing(config: Path) -> None:
    seed_credentials(config)
    result = state(config)
    assert isinstance(result, LoginPresent)
    assert result.expires_at_ms == int(NOW * 1000) + 24 * HOUR_MS
    assert result.can_refresh is True
    assert result.subscription_type == "max"


def test_absent_file_is_missing(config: Path) -> None:
    assert state(config) == LoginMissing()
    assert read_gated(creds(config), uid=None, max_bytes=LIMIT) is None


def test_symlink_is_refused(config: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.credentials.json"
    write_file(real, dump(credentials(expires_at_ms=int(NOW * 1000) + HOUR_MS)))
    creds(config).symlink_to(real)
    assert state(config) == LoginRefused(reason="not-a-regular-file")


def test_dangling_symlink_is_refused_not_missing(config: Path, tmp_path: Path) -> None:
    creds(config).symlink_to(tmp_path / "nowhere.json")
    assert state(config) == LoginRefused(reason="not-a-regular-file")


def test_symlink_swapped_in_after_lstat_fails_the_open(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_credentials(config)
    planted = tmp_path / "planted.credentials.json"
    write_file(planted, dump(credentials(expires_at_ms=int(NOW * 1000) + HOUR_MS)))
    swaps: list[str] = []

    def swap(path: str) -> None:
        swaps.append(path)
        os.unlink(path)
        os.symlink(planted, path)

    monkeypatch.setattr(_gate, "after_lstat", swap)
    assert state(config) == LoginRefused(reason="not-a-regular-file")
    assert swaps == [str(creds(config))]


def test_other_regular_file_swapped_in_after_lstat_is_refused(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_credentials(config)

    def swap(path: str) -> None:
        # Same name, same owner and mode, but another inode than the one lstat saw.
        write_file(Path(path), dump(credentials(expires_at_ms=int(NOW * 1000) + HOUR_MS)))

    monkeypatch.setattr(_gate, "after_lstat", swap)
    assert state(config) == LoginRefused(reason="not-a-regular-file")


def _bounded(call: object, seconds: float = 10.0) -> object:
    """Run `call` in a daemon thread; fail (instead of hanging the suite) if it blocks."""
    out: list[object] = []
    assert callable(call)
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the gate blocked"
    return out[0]


def test_fifo_is_refused_without_hanging(config: Path) -> None:
    os.mkfifo(creds(config), 0o600)
    assert _bounded(lambda: state(config)) == LoginRefused(reason="not-a-regular-file")


def test_fifo_swapped_in_after_lstat_does_not_hang(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_credentials(config)

    def swap(path: str) -> None:
        os.unlink(path)
        os.mkfifo(path, 0o600)

    monkeypatch.setattr(_gate, "after_lstat", swap)
    assert _bounded(lambda: state(config)) == LoginRefused(reason="not-a-regular-file")


def test_directory_is_refused(config: Path) -> None:
    creds(config).mkdir(mode=0o700)
    assert state(config) == LoginRefused(reason="not-a-regular-file")


def test_hard_link_is_refused(config: Path, tmp_path: Path) -> None:
    seed_credentials(config)
    os.link(creds(config), tmp_path / "outside.credentials.json")
    assert state(config) == LoginRefused(reason="hard-linked")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o610, 0o601, 0o660, 0o644], ids=oct)
def test_group_or_other_bits_are_refused(config: Path, mode: int) -> None:
    seed_credentials(config)
    os.chmod(creds(config), mode)
    assert state(config) == LoginRefused(reason="mode-too-wide")


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700], ids=oct)
def test_owner_only_modes_are_accepted(config: Path, mode: int) -> None:
    seed_credentials(config)
    os.chmod(creds(config), mode)
    assert isinstance(state(config), LoginPresent)


def test_another_owner_is_refused(config: Path) -> None:
    seed_credentials(config)
    if os.getuid() == 0:
        os.chown(creds(config), 65534, -1)  # a spare uid: nobody
        assert state(config) == LoginRefused(reason="foreign-owner")
        os.chown(creds(config), 0, -1)
    # The caller's uid is a parameter too: the same file is foreign to any other uid.
    result = read_login_state(config, now=NOW, uid=os.getuid() + 4242)
    assert result == LoginRefused(reason="foreign-owner")


def _padded(size: int) -> bytes:
    data = dump(credentials(expires_at_ms=int(NOW * 1000) + HOUR_MS))
    return data + b" " * (size - len(data))


def test_exactly_64_kib_is_accepted(config: Path) -> None:
    seed_credentials(config, _padded(LIMIT))
    assert os.path.getsize(creds(config)) == LIMIT
    assert isinstance(state(config), LoginPresent)


def test_64_kib_plus_one_byte_is_malformed(config: Path) -> None:
    seed_credentials(config, _padded(LIMIT + 1))
    assert state(config) == LoginRefused(reason="malformed")


def test_growth_after_fstat_is_caught_by_the_read_itself(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_credentials(config, _padded(LIMIT))
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        with open(creds(config), "ab") as handle:
            handle.write(b" ")
        return result

    monkeypatch.setattr(os, "fstat", fstat_then_grow)
    assert state(config) == LoginRefused(reason="malformed")


@pytest.mark.parametrize(
    "data",
    [b"{", b"not json", b"", b"\xff\xfe", b'{"agentOauth": {"accessToken": "' + b"x" * 10],
    ids=["brace", "words", "empty", "bad-utf8", "truncated"],
)
def test_invalid_json_is_malformed(config: Path, data: bytes) -> None:
    token = canary_token("oat")
    seed_credentials(config, data.replace(b"x" * 10, token.encode()))
    assert state(config) == LoginRefused(reason="malformed")


@pytest.mark.parametrize("data", [b"{", b"\xff\xfe", b'{"agentOauth": {"accessToken": "xxxxxxxxxx'])
def test_malformed_credentials_chain_no_parser_error(config: Path, data: bytes) -> None:
    # A JSONDecodeError keeps the whole file in `doc` (a UnicodeDecodeError in `object`): the
    # refusal must not carry it as __context__, where the token would stay reachable.
    token = canary_token("oat")
    seed_credentials(config, data.replace(b"x" * 10, token.encode()))
    with pytest.raises(GateRefused) as info:
        _files.read_credentials(str(config), uid=None)
    assert info.value.reason == "malformed"
    assert info.value.__context__ is None
    assert info.value.__cause__ is None


@pytest.fixture
def zeroed(monkeypatch: pytest.MonkeyPatch) -> list[bytearray]:
    """Record every buffer the gate's callers and the gate itself zero."""
    seen: list[bytearray] = []
    real = _gate.zero

    def recording(buffer: bytearray) -> None:
        real(buffer)
        seen.append(buffer)

    monkeypatch.setattr(_credentials, "zero", recording)
    monkeypatch.setattr(_gate, "zero", recording)
    return seen


def test_buffer_is_zeroed_after_parsing(config: Path, zeroed: list[bytearray]) -> None:
    seed_credentials(config)
    size = os.path.getsize(creds(config))
    assert isinstance(state(config), LoginPresent)
    assert len(zeroed) == 1
    assert len(zeroed[0]) == size
    assert zeroed[0] == bytearray(size)


def test_buffer_is_zeroed_after_invalid_json(config: Path, zeroed: list[bytearray]) -> None:
    seed_credentials(config, b'{"agentOauth": {"accessToken": "' + canary_token("oat").encode())
    assert state(config) == LoginRefused(reason="malformed")
    assert len(zeroed) == 1
    assert zeroed[0] == bytearray(len(zeroed[0]))
    assert len(zeroed[0]) > 0


def test_returned_buffer_is_a_bytearray_the_caller_can_zero(config: Path) -> None:
    seed_credentials(config)
    raw = read_gated(creds(config), uid=None, max_bytes=LIMIT)
    assert isinstance(raw, bytearray)
    assert CANARY.encode() in raw  # the gate hands the caller the bytes, nothing else does
    _gate.zero(raw)
    assert raw == bytearray(len(raw))


def test_read_failing_partway_zeroes_the_buffer_and_raises_redacted(
    config: Path, zeroed: list[bytearray], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = seed_credentials(config)
    real_readv = os.readv
    calls: list[int] = []

    def readv_then_fail(fd: int, buffers: list[memoryview]) -> int:
        calls.append(fd)
        if len(calls) == 1:
            return real_readv(fd, [buffers[0][:10]])  # a short first read
        raise OSError(errno.EIO, f"I/O error near {token}")

    monkeypatch.setattr(os, "readv", readv_then_fail)
    with pytest.raises(OSError) as caught:
        read_login_state(config, now=NOW)
    exc = caught.value
    assert len(calls) == 2
    assert len(zeroed) == 1
    assert zeroed[0] == bytearray(len(zeroed[0]))
    assert exc.__cause__ is None
    assert exc.__context__ is None
    assert CANARY not in exception_text(exc)
    assert "[REDACTED]" in str(exc)


def test_unexpected_filesystem_error_is_redacted_without_chain(tmp_path: Path) -> None:
    # A config dir path that is a regular file: lstat fails with ENOTDIR, and the path (which
    # here is token-shaped) is in the original message.
    token = canary_token("oat")
    bogus = tmp_path / token
    bogus.write_bytes(b"")
    with pytest.raises(OSError) as caught:
        read_login_state(bogus, now=NOW)
    exc = caught.value
    assert exc.__cause__ is None
    assert exc.__context__ is None
    assert exc.__suppress_context__ is True
    assert CANARY not in exception_text(exc)


def test_gate_refusal_is_a_reason_not_a_message(config: Path) -> None:
    creds(config).mkdir()
    with pytest.raises(GateRefused) as caught:
        read_gated(creds(config), uid=None, max_bytes=LIMIT)
    assert caught.value.reason == "not-a-regular-file"


def test_lenient_gate_skips_owner_mode_and_link_rules(config: Path, tmp_path: Path) -> None:
    path = config / "usage.json"
    write_file(path, b"{}", 0o644)
    os.link(path, tmp_path / "second-name")
    assert read_gated(path, uid=os.getuid() + 1, max_bytes=16, strict=False) == bytearray(b"{}")
    with pytest.raises(GateRefused) as caught:
        read_gated(path, uid=None, max_bytes=1, strict=False)
    assert caught.value.reason == "malformed"


@pytest.mark.parametrize("stale_size", [0, 1, 100])
def test_a_file_that_grew_after_the_fstat_is_read_whole_up_to_the_limit(
    tmp_path: Path, stale_size: int
) -> None:
    # The buffer is sized to the fstat's size; a file that grew since still reads whole, and one
    # that grew past the limit is still refused.
    path = tmp_path / "grown"
    for size, refused in ((3000, False), (LIMIT, False), (LIMIT + 1, True)):
        path.write_bytes(b"x" * size)
        fd = os.open(path, os.O_RDONLY)
        try:
            if refused:
                with pytest.raises(GateRefused):
                    _gate._read(fd, stale_size, LIMIT)
            else:
                assert _gate._read(fd, stale_size, LIMIT) == b"x" * size
        finally:
            os.close(fd)
