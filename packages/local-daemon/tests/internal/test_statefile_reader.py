from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_daemon._statefile import UnsafeFileError, read_safe_file


def _problem(path: Path, **rules: object) -> str:
    with pytest.raises(UnsafeFileError) as info:
        read_safe_file(path, **{"max_bytes": 16, **rules})  # type: ignore[arg-type]
    assert info.value.__context__ is None or isinstance(info.value.__context__, OSError)
    return info.value.problem


def test_reads_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789abcdef")
    path.chmod(0o600)
    read = read_safe_file(path, max_bytes=16)
    assert read.data == b"0123456789abcdef"
    assert read.stat.st_size == 16
    assert "0123" not in repr(read)


def test_refusals(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_bytes(b"x")
    good.chmod(0o600)
    assert _problem(tmp_path / "missing") == "missing"
    assert _problem(good / "below") == "missing"
    link = tmp_path / "link"
    link.symlink_to(good)
    assert _problem(link) == "symlink"
    assert read_safe_file(link, max_bytes=16, follow_symlinks=True).data == b"x"
    os.mkfifo(tmp_path / "fifo", 0o600)
    assert _problem(tmp_path / "fifo") == "not_regular"
    assert _problem(tmp_path) == "not_regular"
    big = tmp_path / "big"
    big.write_bytes(b"y" * 17)
    big.chmod(0o600)
    assert _problem(big) == "too_large"
    open_mode = tmp_path / "open"
    open_mode.write_bytes(b"z")
    open_mode.chmod(0o640)
    assert _problem(open_mode) == "mode"
    assert read_safe_file(open_mode, max_bytes=16, forbidden_mode=0o022).data == b"z"
    os.chown(good, 12345, -1)
    assert _problem(good) == "owner"
    assert read_safe_file(good, max_bytes=16, owner=False).data == b"x"


def test_errors_carry_no_bytes(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_bytes(b"CANARY-SECRET" * 4)
    path.chmod(0o644)
    with pytest.raises(UnsafeFileError) as info:
        read_safe_file(path, max_bytes=4096)
    assert "CANARY" not in repr(info.value) + str(info.value) + repr(vars(info.value))
