"""Private network namespaces for tests: 192.0.2.10 (a documentation address) on their own lo.

The remote listener needs a non-loopback address, and tests never bind or send outside a
namespace they made. Two ways in, one set-up (`lo` up, `ADDR` on it):

- `observe_in_namespace(argv)` runs a script's namespace side under `unshare -n` (the namespace
  disappears with its last process: nothing to clean up), checks that no secret reached its
  output, and returns the JSON object it printed last.
- `observe_script(script, workdir, ...)` is that for a test file that plays its own namespace
  side (`python SCRIPT [ARGS...] WORKDIR`), its secret the token file `WORKDIR/token`.
- `inside_namespace()` moves the calling thread into a fresh namespace for the length of a
  `with`, so a test drives `start_daemon(remote=...)` and its clients in-process; the processes
  (a browser) and threads it starts meanwhile are inside too. The host's namespace comes back at
  the end; sockets made inside stay inside.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ADDR = "192.0.2.10"
SET_UP = f"ip link set lo up && ip addr add {ADDR}/32 dev lo"
_CLONE_NEWNET = 0x40000000
# Worker threads that outlive a test: one started inside a namespace would stay there.
_LONG_LIVED_THREADS = ("local-daemon-command",)


def run_in_namespace(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a fresh namespace with `ADDR` on its lo; return the finished process."""
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", f'{SET_UP} && exec "$@"', "sh", *argv],
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def last_json(output: str) -> dict[str, Any]:
    """Return the last line of `output` that is a JSON object."""
    lines = [line for line in output.splitlines() if line.startswith("{")]
    assert lines, output[-3000:]
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def observe_in_namespace(
    argv: Sequence[str],
    *,
    secret_files: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Run `argv` in a fresh namespace; return its last JSON line once it exited 0 and printed
    none of the secrets in `secret_files` (each file's stripped text)."""
    proc = run_in_namespace(argv, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for path in secret_files:
        secret = path.read_text().strip()
        assert secret not in proc.stdout
        assert secret not in proc.stderr
    return last_json(proc.stdout)


def observe_script(
    script: Path, workdir: Path, *args: str, timeout: float = 120.0
) -> dict[str, Any]:
    """Run `python SCRIPT ARGS... WORKDIR` in a fresh namespace; return its last JSON line once it
    exited 0 and printed nothing of the secret in `WORKDIR/token`."""
    return observe_in_namespace(
        [sys.executable, str(script), *args, str(workdir)],
        secret_files=[workdir / "token"],
        timeout=timeout,
    )


def _namespace_of_this_thread() -> int:
    return os.stat("/proc/thread-self/ns/net").st_ino


@contextmanager
def inside_namespace() -> Iterator[str]:
    """Move this thread into a fresh network namespace with `ADDR` on lo; yield `ADDR`."""
    libc = ctypes.CDLL(None, use_errno=True)
    host = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    host_namespace = os.fstat(host).st_ino
    before = {thread.ident for thread in threading.enumerate()}
    try:
        if libc.unshare(_CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")
        try:
            # Nothing may reach ADDR unless this thread really is in a namespace of its own.
            assert _namespace_of_this_thread() != host_namespace
            # One `ip` process (no shell): this runs once per test that uses a namespace.
            subprocess.run(
                ["ip", "-batch", "-"],
                input=f"link set lo up\naddr add {ADDR}/32 dev lo\n",
                text=True,
                check=True,
                capture_output=True,
                timeout=30,
            )
            yield ADDR
        finally:
            if libc.setns(host, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns(host network namespace)")
    finally:
        os.close(host)
    assert _namespace_of_this_thread() == host_namespace
    stuck = [
        thread.name
        for thread in threading.enumerate()
        if thread.ident not in before and thread.name.startswith(_LONG_LIVED_THREADS)
    ]
    # A test inside a namespace runs async commands only: a pooled worker thread started here
    # would serve later tests from inside this namespace.
    assert not stuck, f"long-lived threads started inside a namespace: {stuck}"
