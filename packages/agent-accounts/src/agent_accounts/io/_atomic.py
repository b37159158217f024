"""File primitives: the one exclusive-create writer, atomic replace, and Linux `renameat2`.

Every file this package creates goes through `create_exclusive` (O_EXCL, O_NOFOLLOW, 0600), so a
planted name or symlink fails the create instead of being written through. `rename_noreplace` and
`rename_exchange` are `renameat2(2)` through libc: the refresher takes its locks with the first
(a prepared dir appears at the lock path whole, or not at all) and installs renewed credentials
with the second (what comes out is compared with what was read, and swapped back if it differs).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False  # not typing's: write_reading runs on every poll
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "RenameUnsupported",
    "atomic_write",
    "create_exclusive",
    "ensure_private_dir",
    "rename_exchange",
    "rename_noreplace",
    "sync_dir",
    "write_all",
    "write_new",
]

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


class RenameUnsupported(OSError):
    """This filesystem or libc has no `renameat2` with the flag asked for."""


def ensure_private_dir(path: str) -> None:
    """Create `path` and each missing parent with mode 0700, whatever the umask.

    Not `os.makedirs`: it gives the mode only to the last directory (parents get 0777) and the
    umask applies to all of them, so under umask 022 `status-cache` came out 0755. Only a
    directory this call made itself is ever chmodded; one that exists is left as it is.
    """
    try:
        _make_private_dir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        parent = os.path.dirname(path.rstrip("/")) or "."
        if parent in (path, "/", "."):
            raise
        ensure_private_dir(parent)  # bounded: one call per missing component
        try:
            _make_private_dir(path)
        except FileExistsError:  # made meanwhile by someone else: theirs, left as it is
            if not os.path.isdir(path):
                raise


def _make_private_dir(path: str) -> None:
    """mkdir `path` with mode 0700 exactly: the umask can only have cleared bits of it."""
    os.mkdir(path, 0o700)
    try:
        # O_NOFOLLOW + fchmod: the mode lands on this directory even if the name is swapped for
        # a symlink meanwhile. A umask that cleared the owner's read bit leaves it unopenable:
        # then it stays as made, and the first write into it fails as an I/O error.
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except PermissionError:
        return
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:  # a umask that clears owner bits (0277)
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def create_exclusive(path: str) -> int:
    """Create `path` exclusively (no symlink followed), mode 0600; return the write descriptor."""
    return os.open(path, _CREATE_FLAGS, 0o600)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd`."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_new(path: str, data: bytes, *, sync: bool = False, mode: int = 0o600) -> None:
    """Create `path` exclusively with `data` (synced if asked); nothing is left on failure.

    `mode` other than 0600 is set exactly, whatever the umask (unit files others read: 0644).
    """
    fd = create_exclusive(path)
    try:
        try:
            if mode != 0o600:
                os.fchmod(fd, mode)
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        _unlink_quietly(path)
        raise


def _unlink_quietly(path: str) -> None:
    # Not contextlib.suppress: contextlib imports collections and functools, milliseconds that
    # the status-line tee would pay on every prompt.
    try:  # noqa: SIM105
        os.unlink(path)
    except OSError:
        pass


def sync_dir(directory: str) -> None:
    """Sync a directory's entries, best effort (the rename already happened)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def atomic_write(directory: str, name: str, data: bytes, *, mode: int = 0o600) -> str:
    """Write `data` to `directory/name` so readers see the old file or the new one, never a part.

    The temp file is `.<name>.<pid>.<random>.tmp`: it never ends in `.json`, so no reader glob
    takes it, and it is removed on any failure.
    """
    target = os.path.join(directory, name)
    # os.urandom, not `secrets`: its hmac/hashlib imports cost ~10 ms for six random bytes.
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    write_new(temp, data, sync=True, mode=mode)
    try:
        os.rename(temp, target)
    except BaseException:
        _unlink_quietly(temp)
        raise
    sync_dir(directory)
    return target


_renameat2: Callable[[int, bytes, int, bytes, int], int] | None = None


def _libc_renameat2() -> Callable[[int, bytes, int, bytes, int], int]:
    global _renameat2
    if _renameat2 is None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        try:
            function = libc.renameat2
        except AttributeError:
            raise RenameUnsupported(errno.ENOSYS, "renameat2") from None
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
        function.argtypes += [ctypes.c_uint]
        function.restype = ctypes.c_int

        def call(olddir: int, old: bytes, newdir: int, new: bytes, flags: int) -> int:
            if function(olddir, old, newdir, new, flags) == 0:
                return 0
            return ctypes.get_errno()

        _renameat2 = call
    return _renameat2


def _rename2(old: str, new: str, flags: int) -> None:
    code = _libc_renameat2()(_AT_FDCWD, os.fsencode(old), _AT_FDCWD, os.fsencode(new), flags)
    if code == 0:
        return
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        raise RenameUnsupported(code, os.strerror(code))
    if code == errno.EEXIST:
        raise FileExistsError(code, os.strerror(code))
    if code == errno.ENOENT:
        raise FileNotFoundError(code, os.strerror(code))
    raise OSError(code, os.strerror(code))


def rename_noreplace(old: str, new: str) -> None:
    """Rename `old` to `new` unless `new` exists (FileExistsError); atomic."""
    _rename2(old, new, _RENAME_NOREPLACE)


def rename_exchange(first: str, second: str) -> None:
    """Swap the two names atomically; both must exist."""
    _rename2(first, second, _RENAME_EXCHANGE)
