"""Token commands on a full tmpfs and on a read-only mount: real mounts, the real CLI (root)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_daemon import TokenFileError, create_daemon_auth, ensure_token_file, rotate_token_file

CLI = Path(sys.executable).parent / "local-daemon"


def _secret(path: Path) -> str:
    """The token file's secret, once the gate has accepted the file."""
    create_daemon_auth(path, sessions_file=path.with_name("gate-sessions.json"))
    return path.read_text().strip()


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=True, capture_output=True)


def _fill(directory: Path) -> None:
    """Write until the file system answers ENOSPC (bounded by its size)."""
    with open(directory / "filler", "wb", buffering=0) as handle:
        for _ in range(4096):
            try:
                handle.write(b"\0" * 4096)
            except OSError:
                return
    raise AssertionError("the tmpfs never filled")


@pytest.fixture
def full_dir(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "full"
    mount.mkdir()
    _mount("-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mount))
    try:
        _fill(mount)
        yield mount
    finally:
        _umount(mount)


@pytest.fixture
def ro_dir(tmp_path: Path) -> Iterator[Path]:
    """A read-only bind mount of a dir that holds one good token file, `token`."""
    source = tmp_path / "rw"
    source.mkdir(mode=0o700)
    ensure_token_file(source / "token")
    mount = tmp_path / "ro"
    mount.mkdir()
    _mount("--bind", "-o", "ro", str(source), str(mount))
    try:
        yield mount
    finally:
        _umount(mount)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "token", *args], capture_output=True, text=True, timeout=60, check=False
    )


def _one_fixed_line(result: subprocess.CompletedProcess[str], problem: str) -> None:
    assert result.returncode == 78, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("local-daemon: token file ")
    assert lines[0].endswith(f"(problem: {problem})")
    assert "Traceback" not in result.stderr


def test_ensure_on_a_full_disk_leaves_no_file(full_dir: Path) -> None:
    path = full_dir / "token"
    with pytest.raises(TokenFileError) as info:
        ensure_token_file(path)
    assert info.value.problem == "unwritable"
    assert "No space left" in str(info.value)
    assert info.value.__context__ is None
    assert sorted(p.name for p in full_dir.iterdir()) == ["filler"]
    result = _cli("ensure", str(path))
    _one_fixed_line(result, "unwritable")
    assert sorted(p.name for p in full_dir.iterdir()) == ["filler"]
    # Once there is room, the next ensure creates a good file: nothing half-made was in the way.
    (full_dir / "filler").unlink()
    assert _cli("ensure", str(path)).returncode == 0
    assert _secret(path)


def test_rotate_on_a_full_disk_keeps_the_old_secret(full_dir: Path) -> None:
    path = full_dir / "token"
    (full_dir / "filler").unlink()
    ensure_token_file(path)
    before = _secret(path)
    _fill(full_dir)
    with pytest.raises(TokenFileError) as info:
        rotate_token_file(path)
    assert info.value.problem == "unwritable"
    _one_fixed_line(_cli("rotate", str(path)), "unwritable")
    assert _secret(path) == before
    assert sorted(p.name for p in full_dir.iterdir()) == ["filler", "token"]


def test_every_token_command_on_a_read_only_mount(ro_dir: Path) -> None:
    good = ro_dir / "token"
    secret = _secret(good)
    # Reading needs no write: ensure of an existing good file and login-code still work.
    assert _cli("ensure", str(good)).stdout.strip() == str(good)
    assert _cli("login-code", str(good)).stdout.startswith("v1.")
    for args in (("ensure", str(ro_dir / "new")), ("rotate", str(good))):
        result = _cli(*args)
        _one_fixed_line(result, "unwritable")
        assert "Read-only file system" in result.stderr
        assert secret not in result.stderr
    _one_fixed_line(_cli("ensure", str(ro_dir / "sub" / "new")), "unwritable")
    _one_fixed_line(_cli("login-code", str(ro_dir / "new")), "missing")
    assert _secret(good) == secret
    assert sorted(p.name for p in ro_dir.iterdir()) == ["token"]


def test_ensure_never_replaces_a_file_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "token"
    theirs = tmp_path / "theirs"
    ensure_token_file(theirs)
    real_link = os.link

    def link_after_someone_else(
        src: str, dst: str, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None
    ) -> None:
        os.rename(theirs, path)  # another ensure won the race just before our link
        real_link(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "link", link_after_someone_else)
    winner = _secret(theirs)
    assert ensure_token_file(path) == path
    assert _secret(path) == winner
    assert [p.name for p in tmp_path.iterdir()] == ["token"]


_TRACED = (
    "mkdir",
    "openat",
    "write",
    "fsync",
    "link",
    "linkat",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "close",
)


def _crash_points(tmp_path: Path) -> list[tuple[str, int]]:
    """Run `token ensure` under strace once; list (syscall, nth) of every step that writes.

    From the first touch of the token's directory up to the check that reads the made file.
    """
    target = tmp_path / "probe" / "token"
    log = tmp_path / "trace.log"
    subprocess.run(
        [
            "strace",
            "-qq",
            "-o",
            str(log),
            "-e",
            "trace=" + ",".join(_TRACED),
            str(CLI),
            "token",
            "ensure",
            str(target),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    counts: dict[str, int] = {}
    points: list[tuple[str, int]] = []
    started = False
    for line in log.read_text().splitlines():
        name = line.split("(", 1)[0]
        if name not in _TRACED:
            continue  # "+++ exited" and signal lines
        counts[name] = counts.get(name, 0) + 1
        if f'"{target}", O_RDONLY' in line:
            break
        started = started or str(target.parent) in line
        if started:
            points.append((name, counts[name]))
    return points


def test_ensure_killed_at_every_step_leaves_no_partial_file(tmp_path: Path) -> None:
    points = _crash_points(tmp_path)
    names = {name for name, _ in points}
    assert {"openat", "write", "fsync", "linkat", "unlinkat"} <= names, points
    assert len(points) < 200
    for index, (name, nth) in enumerate(points):
        target = tmp_path / f"run{index}" / "token"
        killed = subprocess.run(
            [
                "strace",
                "-qq",
                "-o",
                "/dev/null",
                "-e",
                f"trace={name}",
                "-e",
                f"inject={name}:signal=KILL:when={nth}",
                str(CLI),
                "token",
                "ensure",
                str(target),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert killed.returncode != 0, (name, nth)
        # Whatever step the kill hit, the token file is absent or whole, never partial.
        if target.exists():
            assert _secret(target), (name, nth)
        # And the next ensure just works: nothing half-made is in its way.
        assert _secret(ensure_token_file(target)), (name, nth)
