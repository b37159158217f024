from __future__ import annotations

import ctypes
import errno
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from aiohttp import web

from daemon_raw_http import raw_request, serve_app
from local_daemon import _beneath
from local_daemon._beneath import BeneathMode, beneath_mode, open_beneath
from local_daemon._static import mount_static_app

INSIDE = b"inside the root"
SECRET = b"TOP-SECRET-OUTSIDE-ROOT"
MODES: list[BeneathMode] = ["openat2", "walk"]
_READ = os.O_RDONLY | os.O_CLOEXEC
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _read(root: Path, parts: list[str], mode: BeneathMode, *, follow: bool = False) -> bytes:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = open_beneath(root_fd, parts, _READ, mode=mode, follow_symlinks=follow)
    finally:
        os.close(root_fd)
    try:
        return os.read(fd, 1024)
    finally:
        os.close(fd)


def _errno(root: Path, parts: list[str], mode: BeneathMode, *, follow: bool = False) -> int | None:
    try:
        _read(root, parts, mode, follow=follow)
    except OSError as exc:
        return exc.errno
    return None


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "page.txt").write_bytes(INSIDE)
    (root / "file.txt").write_bytes(INSIDE)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "page.txt").write_bytes(SECRET)
    (root / "link-out").symlink_to(tmp_path / "outside")
    (root / "link-rel").symlink_to("../outside")
    (root / "link-in").symlink_to("sub")
    (root / "link-file.txt").symlink_to("file.txt")
    (root / "link-abs-in.txt").symlink_to(root / "sub" / "page.txt")
    (root / "sub" / "link-up.txt").symlink_to("../file.txt")
    (root / "sub" / "link-up-out").symlink_to("../../outside")
    (root / "link-chain").symlink_to("link-in")
    (root / "link-loop").symlink_to("link-loop")
    return root


@pytest.mark.parametrize("mode", MODES)
def test_open_beneath_answers(tree: Path, mode: BeneathMode) -> None:
    assert _read(tree, ["sub", "page.txt"], mode) == INSIDE
    assert _read(tree, ["file.txt"], mode) == INSIDE
    # Every symlink below the root is refused, leading out or not, last component or not.
    for parts in (
        ["link-out", "page.txt"],
        ["link-rel", "page.txt"],
        ["link-in", "page.txt"],
        ["link-file.txt"],
    ):
        assert _errno(tree, parts, mode) == errno.ELOOP, parts
    assert _errno(tree, ["missing.txt"], mode) == errno.ENOENT
    assert _errno(tree, ["missing", "page.txt"], mode) == errno.ENOENT
    assert _errno(tree, ["file.txt", "page.txt"], mode) == errno.ENOTDIR


@pytest.mark.parametrize("mode", MODES)
def test_following_symlinks_stays_beneath(tree: Path, mode: BeneathMode) -> None:
    for parts in (
        ["link-in", "page.txt"],
        ["link-file.txt"],
        ["link-abs-in.txt"],  # absolute, but naming a place inside the root
        ["sub", "link-up.txt"],
        ["link-chain", "page.txt"],
    ):
        assert _read(tree, parts, mode, follow=True) == INSIDE, parts
    for parts in (["link-out", "page.txt"], ["link-rel", "page.txt"], ["sub", "link-up-out"]):
        assert _errno(tree, parts, mode, follow=True) == errno.EXDEV, parts
    assert _errno(tree, ["link-loop"], mode, follow=True) == errno.ELOOP
    assert _errno(tree, ["missing.txt"], mode, follow=True) == errno.ENOENT


@pytest.mark.parametrize("parts", [[], [""], ["."], [".."], ["a/b"], ["sub", ".."], ["a\0"]])
def test_open_beneath_refuses_unjudged_parts(tree: Path, parts: list[str]) -> None:
    with pytest.raises(ValueError, match="plain names"):
        _read(tree, parts, "walk")


def test_beneath_mode_falls_back_when_openat2_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def enosys(dir_fd: int, relative: str, flags: int) -> int:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(_beneath, "_openat2_works", None)
    monkeypatch.setattr(_beneath, "_openat2", enosys)
    assert beneath_mode() == "walk"
    monkeypatch.undo()
    monkeypatch.setattr(_beneath, "_openat2_works", None)
    # The kernels this package supports (Linux 5.6+) have openat2, and Debian's seccomp allows it.
    assert beneath_mode() == "openat2"


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


class Flipper:
    """Swap a directory and a symlink leading out, `flips` times, in a thread."""

    def __init__(self, directory: Path, symlink: Path, flips: int) -> None:
        self.directory, self.symlink, self.flips = directory, symlink, flips
        self.done = threading.Event()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            for _ in range(self.flips):
                if self.stop.is_set():
                    break
                _exchange(self.directory, self.symlink)
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            self.done.set()

    def __enter__(self) -> Flipper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.done.wait()
        self.thread.join()
        assert not self.errors


@pytest.fixture
def racy(tmp_path: Path) -> Path:
    """A root whose `sub` is about to be exchanged with a symlink to a directory outside it."""
    root = tmp_path / "dist"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "page.txt").write_bytes(INSIDE)
    (root / "index.html").write_bytes(b"<!doctype html>")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "page.txt").write_bytes(SECRET)
    (tmp_path / "swap").symlink_to(outside)
    # Inside the root too, so RENAME_EXCHANGE stays on one directory and the swap is atomic.
    (tmp_path / "swap").rename(root / "swap")
    return root


@pytest.mark.parametrize("follow", [False, True], ids=["no-symlinks", "following"])
@pytest.mark.parametrize("mode", MODES)
def test_symlink_swap_race_never_escapes(racy: Path, mode: BeneathMode, follow: bool) -> None:
    seen: dict[str, int] = {"inside": 0, "refused": 0, "escaped": 0}
    root_fd = os.open(racy, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with Flipper(racy / "sub", racy / "swap", flips=5_000) as flipper:
            for _ in range(200_000):  # bounded; ends as soon as the flipper is done
                if flipper.done.is_set():
                    break
                try:
                    fd = open_beneath(
                        root_fd, ["sub", "page.txt"], _READ, mode=mode, follow_symlinks=follow
                    )
                except OSError as exc:
                    refused = exc.errno
                else:
                    refused = None
                if refused is not None:
                    # Following: leading out, or (the walk) swapped back while being read.
                    assert refused in ((errno.EXDEV, errno.ELOOP) if follow else (errno.ELOOP,))
                    seen["refused"] += 1
                    continue
                try:
                    body = os.read(fd, 1024)
                finally:
                    os.close(fd)
                seen["escaped" if body == SECRET else "inside"] += 1
    finally:
        os.close(root_fd)
    assert seen["escaped"] == 0, seen
    # The swap was visible to the reader both ways, so the race was really run.
    assert seen["inside"] > 0, seen
    assert seen["refused"] > 0, seen


@pytest.mark.parametrize("mode", MODES)
async def test_static_app_under_symlink_swap_never_escapes(
    racy: Path, mode: BeneathMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_beneath, "_openat2_works", mode == "openat2")
    app = web.Application()
    mount_static_app(app, root=racy)
    statuses: dict[int, int] = {}
    async with serve_app(app) as port:
        with Flipper(racy / "sub", racy / "swap", flips=200_000) as flipper:
            for _ in range(150):
                resp = await raw_request(port, "GET", "/sub/page.txt")
                assert SECRET not in resp.body
                assert (resp.status, resp.body) in ((200, INSIDE), (403, b"Forbidden")), resp
                statuses[resp.status] = statuses.get(resp.status, 0) + 1
                if flipper.done.is_set():
                    break
    assert set(statuses) <= {200, 403}


_SECCOMP_NO_OPENAT2 = """
import ctypes, errno, os, struct, sys
# Classic BPF: openat2 (437 on every Linux architecture) fails with ENOSYS, as on a kernel
# before 5.6 or under a container profile that predates it; everything else is allowed.
code = b"".join(
    struct.pack("=HBBI", *row)
    for row in (
        (0x20, 0, 0, 0),  # ld [nr]
        (0x15, 0, 1, 437),  # jeq #437
        (0x06, 0, 0, 0x00050000 | errno.ENOSYS),  # ret ERRNO(ENOSYS)
        (0x06, 0, 0, 0x7FFF0000),  # ret ALLOW
    )
)
program = ctypes.create_string_buffer(code, len(code))
fprog = ctypes.create_string_buffer(struct.pack("=HxxxxxxQ", 4, ctypes.addressof(program)))
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.addressof(fprog), 0, 0) == 0  # PR_SET_SECCOMP, MODE_FILTER

from local_daemon._beneath import beneath_mode, open_beneath

root = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
print(beneath_mode())
fd = open_beneath(root, ["sub", "page.txt"], os.O_RDONLY)
print(os.read(fd, 100).decode())
try:
    open_beneath(root, ["link-out", "page.txt"], os.O_RDONLY)
except OSError as exc:
    print(errno.errorcode[exc.errno])
"""


def test_a_kernel_without_openat2_gets_the_walk(tree: Path) -> None:
    # A real seccomp filter in a child process, not a patched function.
    result = subprocess.run(
        [sys.executable, "-c", _SECCOMP_NO_OPENAT2, str(tree)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["walk", INSIDE.decode(), "ELOOP"]
