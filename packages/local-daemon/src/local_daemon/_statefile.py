"""The daemon's state files, one layer: read, parse, write atomically, lock, notice a change.

The token file, the sessions file, the pid and metadata files, attach's lock and the TLS pair go
through here; nothing else in the package opens them.

- `read_safe_file`, the one reader for files the daemon trusts, as untrusted input: the name is
  checked (`lstat`, or `stat` where symlinks are followed on purpose), opened without blocking on a
  FIFO and, unless told otherwise, without following a symlink, checked again on the open
  descriptor (the name may have been swapped between the two), and read up to a size cap. A
  refusal is answered (not raised) as an `UnsafeFileError` carrying its fixed text (`what`); each
  caller raises its own error type from it. This module never puts a file's bytes into an
  exception.
- `parse_json_document`: a file `_json.parse_json` (the package's one JSON parser, the one the wire
  uses) cannot read, however it fails (bad bytes, bad syntax, a non-finite number, nesting too
  deep for it), is no document; the caller refuses it as any corrupt file.
- `write_atomic`: the whole file to a 0600 temp file beside it, synced, then renamed (or, with
  `replace=False`, hard-linked, which never replaces a file made meanwhile) into place, and the
  directory synced; every step relative to the directory's fd. A crash or a full disk leaves the
  old file or the new one, never a part.
- `make_private_dir`: the directory a state file lives in, created with every missing parent
  0700 (never the 0755 `mkdir -p` gives the parents); an existing one is left as the user made it.
- `open_lock_file` and `flock_within`: the `flock` on a lock file beside the state it guards.
- `path_signature`: what changes when a file is replaced, rewritten, re-owned or re-permitted, and
  `ReReadOnChange`, the cache that reads a file again only when its signature changes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeAlias, TypeVar

from ._json import parse_json

__all__ = [
    "ReReadOnChange",
    "SafeFileProblem",
    "SafeRead",
    "Signature",
    "UnsafeFileError",
    "flock_within",
    "make_private_dir",
    "open_lock_file",
    "parse_json_document",
    "path_signature",
    "read_safe_file",
    "write_atomic",
]

SafeFileProblem: TypeAlias = Literal[
    "missing", "symlink", "not_regular", "owner", "mode", "too_large", "unreadable"
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 64 * 1024


class UnsafeFileError(Exception):
    """The file fails a check: `problem`, the stat or `strerror` that says how, and `what`, the
    fixed text that says it after the file's name ("is a symlink")."""

    def __init__(
        self,
        problem: SafeFileProblem,
        *,
        st: os.stat_result | None = None,
        strerror: str | None = None,
    ) -> None:
        super().__init__(problem)
        self.problem: SafeFileProblem = problem
        self.uid = st.st_uid if st is not None else None
        self.mode = stat.S_IMODE(st.st_mode) if st is not None else None
        self.strerror = strerror or ""
        self.what = _FIXED_TEXT.get(problem, "")

    def _describe(self, rules: _Rules) -> UnsafeFileError:
        if self.problem == "owner":
            self.what = f"is owned by uid {self.uid}, not by this user"
        elif self.problem == "mode":
            reach = "open to" if rules.forbidden_mode & 0o044 else "writable by"
            self.what = f"is {reach} group or others (mode {self.mode or 0:04o})"
        elif self.problem == "too_large":
            self.what = f"is larger than {rules.max_bytes} bytes"
        elif self.problem == "unreadable":
            self.what = f"cannot be read ({self.strerror})"
        return self


_FIXED_TEXT: dict[SafeFileProblem, str] = {
    "missing": "does not exist",
    "symlink": "is a symlink",
    "not_regular": "is not a regular file",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class SafeRead:
    """A file that passed every check: its bytes and the stat of the descriptor they came from."""

    data: bytes
    stat: os.stat_result

    def __repr__(self) -> str:
        return f"SafeRead(size={len(self.data)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rules:
    max_bytes: int
    follow_symlinks: bool
    owner: bool
    forbidden_mode: int


def _check(st: os.stat_result, rules: _Rules) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError("symlink", st=st)
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFileError("not_regular", st=st)
    if rules.owner and st.st_uid != os.geteuid():
        raise UnsafeFileError("owner", st=st)
    if st.st_mode & rules.forbidden_mode:
        raise UnsafeFileError("mode", st=st)
    if st.st_size > rules.max_bytes:
        raise UnsafeFileError("too_large", st=st)


def read_safe_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int,
    follow_symlinks: bool = False,
    owner: bool = True,
    forbidden_mode: int = 0o077,
) -> SafeRead | UnsafeFileError:
    """Read a regular file of at most `max_bytes`, or answer the `UnsafeFileError` that says
    which check it fails.

    `owner` demands this process's effective uid; `forbidden_mode` lists permission bits that
    must be clear (0o077: nobody else may read or write; 0o022: nobody else may write). The
    error is answered, not raised: a caller raising its own error then chains nothing (no
    `__context__` to carry a path or a byte further).
    """
    rules = _Rules(
        max_bytes=max_bytes,
        follow_symlinks=follow_symlinks,
        owner=owner,
        forbidden_mode=forbidden_mode,
    )
    try:
        return _read(Path(path), rules)
    except UnsafeFileError as exc:
        # Without its traceback: the reader's frames hold what it read.
        return exc.with_traceback(None)._describe(rules)


def _read(target: Path, rules: _Rules) -> SafeRead:
    follow_symlinks = rules.follow_symlinks
    max_bytes = rules.max_bytes
    try:
        _check(os.stat(target) if follow_symlinks else os.lstat(target), rules)
        flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS | os.O_NOFOLLOW
        fd = os.open(target, flags)
    except (FileNotFoundError, NotADirectoryError):
        raise UnsafeFileError("missing") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:  # swapped in after the lstat
            raise UnsafeFileError("symlink") from None
        raise UnsafeFileError("unreadable", strerror=exc.strerror) from None
    try:
        st = os.fstat(fd)
        _check(st, rules)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise UnsafeFileError("unreadable", strerror=exc.strerror) from None
    finally:
        os.close(fd)
    if total > max_bytes:  # it grew after the fstat
        raise UnsafeFileError("too_large", st=st)
    return SafeRead(data=b"".join(chunks), stat=st)


def parse_json_document(data: bytes) -> object | None:
    """Return the JSON value `data` holds, or None when the parser cannot read it at all."""
    try:
        value: object = parse_json(data)
    # Whatever the parser raises (a ValueError for bad syntax or bytes, a RecursionError for
    # nesting too deep, MemoryError) is the file's fault. Nothing is chained: the decoder's
    # error quotes the file's text.
    except Exception:
        return None
    return value


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def write_atomic(
    path: str | os.PathLike[str], data: bytes, *, replace: bool = True, mode: int = 0o600
) -> bool:
    """Put `data` at `path` whole (0600, or `mode` exactly), syncing the file and its directory;
    raise `OSError`.

    With `replace=False` an existing file is kept (hard link, which fails rather than replace):
    the return value says whether `data` was put in place.
    """
    target = Path(path)
    dir_fd = os.open(target.parent, _DIR_FLAGS)
    try:
        # os.urandom, not `secrets`: `import local_daemon` loads this module, and `secrets`
        # would pull in `random` for nothing.
        temp = f".{target.name}.{os.urandom(8).hex()}.tmp"
        fd = os.open(temp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
        placed = False
        try:
            try:
                if mode != 0o600:  # exactly, whatever the umask (unit files others read: 0644)
                    os.fchmod(fd, mode)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if replace:
                os.replace(temp, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                placed = True
            else:
                with contextlib.suppress(FileExistsError):
                    os.link(temp, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                    placed = True
        finally:
            if not (replace and placed):
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return placed


def _not_a_directory(path: Path) -> NotADirectoryError:
    return NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))


def make_private_dir(path: str | os.PathLike[str]) -> None:
    """Create the directory `path` and each missing parent, mode 0700; keep an existing one.

    Raise `NotADirectoryError` whose `filename` is the first component that exists but is not a
    directory, other `OSError`s as `mkdir` raises them.
    """
    missing: list[Path] = []
    probe = Path(path)
    while not probe.is_dir():
        if os.path.lexists(probe):
            raise _not_a_directory(probe)
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            if not directory.is_dir():  # made meanwhile by someone else, as something else
                raise _not_a_directory(directory) from None


def open_lock_file(path: str | os.PathLike[str]) -> int:
    """Open (creating, 0600) a lock file without following a symlink; raise `OSError`."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def flock_within(fd: int, *, deadline: float, pause: float) -> bool:
    """Take the exclusive `flock` on `fd`, trying until `time.monotonic()` passes `deadline`
    (at least once); False when another holder kept it."""
    import fcntl

    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))


Signature: TypeAlias = tuple[int, ...]


def path_signature(
    path: str | os.PathLike[str], *, follow_symlinks: bool = False
) -> Signature | None:
    """Return what changes when the file at `path` is replaced, rewritten, re-owned or
    re-permitted; None when it cannot be looked at.

    Following symlinks (certbot's live/ names), the link's own `lstat` is folded in, so a
    repointed link counts as a change too.
    """
    try:
        lst = os.lstat(path)
        st = os.stat(path) if follow_symlinks else lst
    except OSError:
        return None
    own = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    owner = (st.st_uid, st.st_gid)
    if not follow_symlinks:
        return own + owner
    return own + owner + (lst.st_ino, lst.st_mtime_ns, lst.st_ctime_ns)


def stat_signature(st: os.stat_result) -> Signature:
    """Return `path_signature` for a stat already taken (not following symlinks)."""
    return (
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_mode,
        st.st_uid,
        st.st_gid,
    )


_T = TypeVar("_T")


class ReReadOnChange(Generic[_T]):
    """A file's last reading, read again only when the file's signature changes.

    `load(path)` returns the reading and the signature of what it read (None: read again next
    time, say after a failure the caller wants retried). A reading may be a failure value too:
    the caller decides what it caches.
    """

    __slots__ = ("_load", "_path", "_reading", "_signature")

    def __init__(self, path: Path, load: Callable[[Path], tuple[_T, Signature | None]]) -> None:
        self._path = path
        self._load = load
        self._signature: Signature | None = None
        self._reading: _T | None = None

    @property
    def path(self) -> Path:
        """Return the file's path."""
        return self._path

    def current(self) -> _T:
        """Return the reading, loading the file again when its signature changed."""
        # lstat, not stat: a symlink swapped in must change the signature too.
        sig = path_signature(self._path)
        if sig is not None and sig == self._signature and self._reading is not None:
            return self._reading
        reading, read_sig = self._load(self._path)
        # Keyed by what was read, so a write between the lstat and the read is seen next time.
        self._reading, self._signature = reading, read_sig
        return reading
