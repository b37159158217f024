"""Find the daemon that owns a state dir, or start one detached: `mcp-stdio --attach`'s first half.

`find_daemon` trusts nothing it reads. The pid and metadata files go through
`read_daemon_address` (safe reader: this user's regular files that nobody else can write, the pid
alive, both naming the same pid, a port and an IP host). Then two proofs that the process is this
state dir's daemon and not a recycled pid or a squatter on its port: the kernel's lock table shows
that pid holding the `flock` on `daemon.lock` (Linux `/proc/locks`; skipped where there is none),
and `/health` on the named port answers 200 with that pid. The daemon must listen on loopback and
serve `/mcp` (it was started with a tool prefix).

`start_detached` runs `local-daemon serve` in its own session, stdin from /dev/null and its output
appended to `daemon.log` in the state dir, then waits (bounded) until `find_daemon` succeeds. Relays
that start at once take turns on `attach.lock` (an `flock`, never a second daemon's lock): the
first starts the daemon, the others find it. A daemon started by other means in between is found
too (the one we started then exits, refused by the state dir's own lock).

Nothing here imports aiohttp or mcp.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ._errors import DaemonStateError
from ._health import probe_health
from ._pidfile import LOCK_FILE_NAME, DaemonPaths, read_daemon_address, read_meta_file
from ._statefile import flock_within, make_private_dir, open_lock_file

__all__ = [
    "ATTACH_LOCK_NAME",
    "DAEMON_LOG_NAME",
    "AttachProblem",
    "AttachTarget",
    "find_daemon",
    "start_detached",
]

ATTACH_LOCK_NAME: Final = "attach.lock"
DAEMON_LOG_NAME: Final = "daemon.log"
_POLL = 0.05  # seconds between looks while a started daemon comes up or a starter holds the lock
_MIN_WAIT = 0.01
_LOG_TAIL_MAX = 256 * 1024  # a log grown past this is not read back
_LINE_MAX = 300

# `DaemonStateError.problem` values that mean "no daemon there" rather than "refused".
_ABSENT = frozenset({"missing", "stale", "meta_missing", "mismatch"})

AttachFailure = Literal["unavailable", "refused"]


class AttachProblem(Exception):
    """No daemon to attach to (`kind` `unavailable`) or one refused (`refused`); str: the line."""

    def __init__(self, message: str, *, kind: AttachFailure) -> None:
        super().__init__(message)
        self.kind: AttachFailure = kind


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachTarget:
    """The daemon a state dir names: its `pid` and the loopback `url` of its `/mcp`."""

    pid: int
    host: str
    port: int
    url: str


def _lock_holders(lock_file: Path) -> set[int] | None:
    """Pids holding an `flock` on `lock_file` per `/proc/locks`; None when the table is unknown."""
    try:
        info = os.stat(lock_file, follow_symlinks=False)
    except FileNotFoundError:
        return set()
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    holders: set[int] = set()
    for line in table.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:123456 0 EOF"; a waiter's line has "->" in field 1
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            with contextlib.suppress(ValueError):
                holders.add(int(fields[4]))
    return holders


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def find_daemon(paths: DaemonPaths, *, timeout: float = 2.0) -> AttachTarget:
    """Return the live daemon that owns `paths.state_dir`; raise `AttachProblem` otherwise."""
    where = paths.state_dir
    try:
        address = read_daemon_address(paths)
    except DaemonStateError as exc:
        kind: AttachFailure = "unavailable" if exc.problem in _ABSENT else "refused"
        raise AttachProblem(str(exc), kind=kind) from None
    holders = _lock_holders(where / LOCK_FILE_NAME)
    if holders is not None and address.pid not in holders:
        raise AttachProblem(
            f"process {address.pid}, which {where}/daemon.pid names, does not hold"
            f" {LOCK_FILE_NAME}: it is not this state dir's daemon",
            kind="unavailable",
        )
    if not _is_loopback(address.host):
        raise AttachProblem(
            f"the daemon for {where} listens on {address.host}, not on loopback", kind="refused"
        )
    meta = read_meta_file(paths) or {}
    if "tool_prefix" in meta and meta["tool_prefix"] is None:
        raise AttachProblem(
            f"the daemon for {where} (pid {address.pid}) serves no /mcp: it was started without"
            " --tool-prefix",
            kind="refused",
        )
    document = probe_health(address.port, host=address.host, timeout=timeout)
    url_host = f"[{address.host}]" if ":" in address.host else address.host
    if document is None:
        raise AttachProblem(
            f"no healthy daemon on {url_host}:{address.port} (pid {address.pid}, for {where})",
            kind="unavailable",
        )
    if document.get("pid") != address.pid:
        raise AttachProblem(
            f"the daemon on {url_host}:{address.port} is not process {address.pid}, which"
            f" {where}/daemon.pid names",
            kind="unavailable",
        )
    return AttachTarget(
        pid=address.pid,
        host=address.host,
        port=address.port,
        url=f"http://{url_host}:{address.port}/mcp",
    )


@contextlib.contextmanager
def _start_turn(state_dir: Path, deadline: float) -> Iterator[None]:
    """Hold `attach.lock` exclusively: one starter at a time, the others wait (bounded)."""
    path = state_dir / ATTACH_LOCK_NAME
    try:
        fd = open_lock_file(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AttachProblem(f"{path} is a symlink", kind="refused") from None
        raise AttachProblem(
            f"cannot open {path} ({exc.strerror or type(exc).__name__})", kind="refused"
        ) from None
    try:
        if not flock_within(fd, deadline=deadline, pause=_POLL):
            raise AttachProblem(
                f"another relay kept {path} while starting a daemon; gave up waiting",
                kind="unavailable",
            )
        yield
    finally:
        os.close(fd)  # drops the lock; the file stays (removing it would race the next taker)


def _open_log(path: Path) -> int:
    try:
        return os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError as exc:
        reason = "is a symlink" if exc.errno == errno.ELOOP else exc.strerror
        raise AttachProblem(f"cannot open {path} ({reason})", kind="refused") from None


def _last_line(path: Path) -> str | None:
    """The last line the started daemon wrote to its log (the daemon's one-line failure)."""
    from ._statefile import UnsafeFileError, read_safe_file

    read = read_safe_file(path, max_bytes=_LOG_TAIL_MAX, forbidden_mode=0o022)
    if isinstance(read, UnsafeFileError):
        if read.problem != "too_large":
            return None
        data = b""
    else:
        data = read.data
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:_LINE_MAX] if lines else None


# Started daemons, kept so that the `Popen` objects are not collected (and warn) while we relay.
_STARTED: list[subprocess.Popen[bytes]] = []


def start_detached(
    paths: DaemonPaths,
    target: str,
    *,
    tool_prefix: str | None,
    version: str,
    timeout: float,
) -> AttachTarget:
    """Return the daemon of `paths`, starting `local-daemon serve target` detached if none runs.

    Waits at most `timeout` seconds in all; `AttachProblem` when no daemon answers by then or
    the one started exits first (its output is in `daemon.log` in the state dir).
    """
    deadline = time.monotonic() + timeout
    state_dir = paths.state_dir.absolute()
    try:
        make_private_dir(state_dir)
    except OSError as exc:
        raise AttachProblem(
            f"cannot create {state_dir} ({exc.strerror or type(exc).__name__})", kind="refused"
        ) from None
    with _start_turn(state_dir, deadline):
        try:
            return find_daemon(paths)
        except AttachProblem as exc:
            if exc.kind != "unavailable":
                raise
        log_path = state_dir / DAEMON_LOG_NAME
        log = _open_log(log_path)
        argv = [sys.executable, "-m", "local_daemon.cli", "serve", target]
        argv += ["--state-dir", str(state_dir), "--version", version]
        argv += ["--tool-prefix", tool_prefix or ""]
        try:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # the agent's Ctrl-C or hang-up is not the daemon's
                close_fds=True,
            )
        except OSError as exc:
            raise AttachProblem(
                f"cannot start the daemon ({exc.strerror or type(exc).__name__})",
                kind="unavailable",
            ) from None
        finally:
            os.close(log)
        _STARTED.append(child)
        last: AttachProblem | None = None
        while True:
            code = child.poll()
            try:
                return find_daemon(paths)
            except AttachProblem as exc:
                if exc.kind != "unavailable":
                    raise
                last = exc
            if code is not None:
                said = _last_line(log_path)
                raise AttachProblem(
                    f"the daemon it started exited with code {code} before serving"
                    + (f": {said!r}" if said else "")
                    + f" (its output: {log_path})",
                    kind="unavailable",
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise AttachProblem(
                    f"the daemon it started (pid {child.pid}) did not answer within"
                    f" {timeout:g} s ({last}; its output: {log_path})",
                    kind="unavailable",
                )
            time.sleep(min(_POLL, max(left, _MIN_WAIT)))
