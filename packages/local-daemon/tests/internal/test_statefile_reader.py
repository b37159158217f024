from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from local_daemon._statefile import SafeRead, UnsafeFileError, read_safe_file


def _read(path: Path, **rules: Any) -> SafeRead:
    read = read_safe_file(path, **{"max_bytes": 16, **rules})
    assert isinstance(read, SafeRead), read
    return read


def _problem(path: Path, **rules: Any) -> str:
    failed = read_safe_file(path, **{"max_bytes": 16, **rules})
    assert isinstance(failed, UnsafeFileError), failed
    # Answered bare: no frames that held what was read, nothing chained but the OS's error.
    assert failed.__context__ is None or isinstance(failed.__context__, OSError)
    assert failed.__traceback__ is None
    return f"{failed.problem}: {failed.what}"


def test_reads_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789abcdef")
    path.chmod(0o600)
    read = _read(path)
    assert read.data == b"0123456789abcdef"
    assert read.stat.st_size == 16
    assert "0123" not in repr(read)


def test_refusals_and_their_text(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"x")
    good.chmod(0o600)
    assert _problem(tmp_path / "missing") == "missing: does not exist"
    assert _problem(good / "below") == "missing: does not exist"
    link = tmp_path / "link"
    link.symlink_to(good)
    assert _problem(link) == "symlink: is a symlink"
    assert _read(link, follow_symlinks=True).data == b"x"
    os.mkfifo(tmp_path / "fifo", 0o600)
    assert _problem(tmp_path / "fifo") == "not_regular: is not a regular file"
    assert _problem(tmp_path) == "not_regular: is not a regular file"
    big = tmp_path / "big"
    big.write_bytes(b"y" * 17)
    big.chmod(0o600)
    assert _problem(big) == "too_large: is larger than 16 bytes"
    open_mode = tmp_path / "open"
    open_mode.write_bytes(b"z")
    open_mode.chmod(0o640)
    assert _problem(open_mode) == "mode: is open to group or others (mode 0640)"
    assert _read(open_mode, forbidden_mode=0o022).data == b"z"
    open_mode.chmod(0o664)
    assert _problem(open_mode, forbidden_mode=0o022) == (
        "mode: is writable by group or others (mode 0664)"
    )
    os.chown(good, 12345, -1)
    assert _problem(good) == "owner: is owned by uid 12345, not by this user"
    assert _read(good, owner=False).data == b"x"


def test_errors_carry_no_bytes(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"CANARY-SECRET" * 4)
    path.chmod(0o644)
    failed = read_safe_file(path, max_bytes=4096)
    assert isinstance(failed, UnsafeFileError)
    assert "CANARY" not in repr(failed) + str(failed) + repr(vars(failed))
    path.chmod(0o600)
    failed = read_safe_file(path, max_bytes=8)
    assert isinstance(failed, UnsafeFileError)
    assert failed.problem == "too_large"
    assert "CANARY" not in repr(failed) + str(failed) + repr(vars(failed))
