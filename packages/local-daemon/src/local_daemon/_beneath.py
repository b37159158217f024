"""`open_beneath`: open a file named by path segments beneath a directory fd, never leaving it.

Checking a resolved path and then opening it leaves a gap: a directory swapped for a symlink in
between (`renameat2(RENAME_EXCHANGE)`) leads the open outside the root. Here resolution and open
are one step the kernel does relative to the root's fd: `openat2` with `RESOLVE_BENEATH` (Linux
5.6+), or, where the kernel or a seccomp filter refuses it, a walk that opens each directory with
`O_NOFOLLOW | O_DIRECTORY` relative to the previous one. By default a symlink anywhere below the
root fails with `ELOOP` (`RESOLVE_NO_SYMLINKS`). With `follow_symlinks`, a symlink that stays
beneath the root is followed and one leading out (absolute, or climbing above the root) fails with
`EXDEV`: the kernel judges that during its own walk, and the fallback walk reads each link
(`readlinkat`) and resolves its target by the same fd-relative, no-follow steps, so a swap in
between still never leads out. `..` never appears in the caller's segments (already judged).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Literal, TypeAlias

__all__ = ["BeneathMode", "beneath_mode", "open_beneath"]

BeneathMode: TypeAlias = Literal["openat2", "walk"]

# The generic syscall table gives openat2 one number on every Linux architecture.
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_RESOLVE = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
_RESOLVE_FOLLOWING = _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS
# As the kernel's own limit on symlinks followed in one lookup.
_MAX_LINKS = 40
# openat2 answers EAGAIN when a rename elsewhere raced its `..`-free walk; retry a few times.
_EAGAIN_RETRIES = 8
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


_syscall: Callable[..., int] | None = None
# None until the first call finds out whether this kernel (and any seccomp filter) allows it.
_openat2_works: bool | None = None if sys.platform == "linux" else False


def _libc_syscall() -> Callable[..., int]:
    global _syscall
    if _syscall is None:
        func = ctypes.CDLL(None, use_errno=True).syscall
        func.restype = ctypes.c_long
        _syscall = func
    return _syscall


def _openat2(dir_fd: int, relative: str, flags: int, resolve: int = _RESOLVE) -> int:
    how = _OpenHow(flags=flags, mode=0, resolve=resolve)
    name = os.fsencode(relative)
    call = _libc_syscall()
    for _ in range(_EAGAIN_RETRIES):
        fd = int(
            call(
                ctypes.c_long(_SYS_OPENAT2),
                ctypes.c_int(dir_fd),
                ctypes.c_char_p(name),
                ctypes.byref(how),
                ctypes.c_size_t(ctypes.sizeof(how)),
            )
        )
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            raise OSError(code, os.strerror(code))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _open_dir(name: str, dir_fd: int) -> int:
    for _ in range(_EAGAIN_RETRIES):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except NotADirectoryError:
            # O_NOFOLLOW | O_DIRECTORY refuses a symlink with ENOTDIR, as it does a plain file.
            # The look below only picks the answer (the open already refused): a symlink is
            # ELOOP as openat2 says, a file stays ENOTDIR, and a directory again means it was
            # swapped meanwhile, so the open is tried again.
            mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                break
            if not stat.S_ISDIR(mode):
                raise
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))


def _walk(dir_fd: int, parts: Sequence[str], flags: int) -> int:
    current = dir_fd
    try:
        for part in parts[:-1]:
            step = _open_dir(part, current)
            if current != dir_fd:
                os.close(current)
            current = step
        return os.open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=current)
    finally:
        if current != dir_fd:
            os.close(current)


def _real_path(dir_fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{dir_fd}")
    except OSError:
        return None


def _walk_following(dir_fd: int, parts: Sequence[str], flags: int) -> int:
    """`_walk`, following each symlink that stays beneath `dir_fd` by reading it and resolving
    its target with the same steps; `EXDEV` for one leading out. An absolute target naming a
    place under the root's own path (`/proc/self/fd`) is resolved from the root's fd."""
    root_path = _real_path(dir_fd)
    opened: list[int] = []  # directories beneath dir_fd, innermost last
    pending = list(parts)
    links = 0
    try:
        while True:
            here = opened[-1] if opened else dir_fd
            if not pending:  # the path ended on a directory (a link to one, or `..`)
                return os.open(".", flags, dir_fd=here)
            name = pending.pop(0)
            if name == "..":
                if not opened:
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
                os.close(opened.pop())
                continue
            try:
                if not pending:
                    return os.open(name, flags | os.O_NOFOLLOW, dir_fd=here)
                opened.append(_open_dir(name, here))
                continue
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                refused = exc
            try:
                target = os.readlink(name, dir_fd=here)
            except OSError:
                raise refused from None  # swapped back to a directory meanwhile: refused
            links += 1
            if links > _MAX_LINKS:
                raise refused
            if target.startswith("/"):
                if (
                    root_path is None
                    or root_path == "/"
                    or not (target == root_path or target.startswith(f"{root_path}/"))
                ):
                    raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
                target = target[len(root_path) :]
                while opened:  # from the root again
                    os.close(opened.pop())
            pending[:0] = [part for part in target.split("/") if part not in ("", ".")]
    finally:
        for fd in opened:
            os.close(fd)


def beneath_mode() -> BeneathMode:
    """Return which way `open_beneath` resolves on this machine: `openat2` or the fd `walk`."""
    global _openat2_works
    if _openat2_works is None:
        root = os.open("/", _DIR_FLAGS)
        try:
            os.close(_openat2(root, ".", _DIR_FLAGS))
        except OSError:
            # ENOSYS before Linux 5.6; EPERM or ENOSYS from a container's seccomp filter.
            _openat2_works = False
        else:
            _openat2_works = True
        finally:
            os.close(root)
    return "openat2" if _openat2_works else "walk"


def open_beneath(
    dir_fd: int,
    parts: Sequence[str],
    flags: int,
    *,
    mode: BeneathMode | None = None,
    follow_symlinks: bool = False,
) -> int:
    """Open `parts` (plain names, no `.`, `..` or `/`) beneath `dir_fd`, never leaving it.

    Raise `OSError`: `ELOOP` for a symlink on the way (with `follow_symlinks`: for too many),
    `EXDEV` for one leading out (with `follow_symlinks`), `ENOENT`/`ENOTDIR` for a missing one.
    """
    if not parts or any(p in ("", ".", "..") or "/" in p or "\0" in p for p in parts):
        raise ValueError("parts must be plain names")
    if (mode or beneath_mode()) == "openat2":
        if not follow_symlinks:
            return _openat2(dir_fd, "/".join(parts), flags | os.O_NOFOLLOW)
        try:
            return _openat2(dir_fd, "/".join(parts), flags, _RESOLVE_FOLLOWING)
        except OSError as exc:
            # The kernel refuses every absolute symlink beneath; the walk serves one naming a
            # place inside the root and refuses the rest, by the same fd-relative steps.
            if exc.errno != errno.EXDEV:
                raise
        return _walk_following(dir_fd, parts, flags)
    if follow_symlinks:
        return _walk_following(dir_fd, parts, flags)
    return _walk(dir_fd, parts, flags)
