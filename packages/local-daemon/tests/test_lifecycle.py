"""One daemon per state dir, a failed start leaves nothing, SIGTERM never waits on a command."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon_support import TESTS_DIR, DaemonProcess, demo_registry, http, running
from local_daemon import DaemonStateError, daemon_paths, read_pid_file, start_daemon


def _snapshot(state: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(state.iterdir())}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def test_second_daemon_on_a_state_dir_is_refused_and_touches_nothing(
    tmp_path: Path,
) -> None:
    async with running(tmp_path) as first:
        state = tmp_path / "state"
        before = _snapshot(state)
        assert set(before) == {"daemon.lock", "daemon.meta.json", "daemon.pid"}
        other_port = _free_port()
        with pytest.raises(DaemonStateError) as info:
            await start_daemon(
                registry=demo_registry(), version="9", state_dir=state, port=other_port
            )
        assert info.value.problem == "running"
        assert (
            str(info.value) == f"another daemon (pid {os.getpid()}) is already running for {state}"
        )
        assert _snapshot(state) == before
        assert _port_is_free(other_port)
        status, _, _ = await http(first.port, "GET", "/health")
        assert status == 200
    # Closing releases the lock (and removes its file): the next start goes ahead.
    assert not (tmp_path / "state" / "daemon.lock").exists()
    async with running(tmp_path):
        pass


def test_second_serve_exits_69_with_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = DaemonProcess(state)
    try:
        first.wait_ready()
        before = _snapshot(state)
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "local_daemon.cli",
                "serve",
                "daemon_support:demo_registry",
                "--state-dir",
                str(state),
            ],
            env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 69, second
        assert second.stderr == (
            f"local-daemon: another daemon (pid {first.process.pid}) is already running for"
            f" {state}\n"
        )
        assert _snapshot(state) == before
        assert read_pid_file(daemon_paths(state)) == first.process.pid
    finally:
        first.stop()


async def test_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "daemon.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DaemonStateError) as info:
        await start_daemon(registry=demo_registry(), version="1", state_dir=state)
    assert info.value.problem == "symlink"
    assert not (tmp_path / "elsewhere").exists()


def _mount_tmpfs(path: Path) -> None:
    path.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(path)],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def full_state(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "full"
    _mount_tmpfs(mount)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, capture_output=True)


def _fill(directory: Path, leave_pages: int) -> None:
    """Fill the tmpfs to ENOSPC, then free `leave_pages` pages."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as handle:
        for _ in range(4096):
            try:
                handle.write(b"\0" * 4096)
            except OSError:
                break
        else:
            raise AssertionError("the tmpfs never filled")
    size = filler.stat().st_size
    os.truncate(filler, size - size % 4096 - 4096 * leave_pages)


# No room at all, or room for the metadata file but not the pid file after it.
@pytest.mark.parametrize("leave_pages", [0, 1])
async def test_failed_start_on_a_full_disk_leaves_nothing(
    full_state: Path, leave_pages: int
) -> None:
    state = full_state / "state"
    state.mkdir()
    _fill(full_state, leave_pages)
    port = _free_port()
    with pytest.raises(OSError) as info:
        await start_daemon(registry=demo_registry(), version="1", state_dir=state, port=port)
    assert info.value.errno == 28
    assert list(state.iterdir()) == []
    assert _port_is_free(port)
    # With room again, the next start is not in anything's way.
    (full_state / "filler").unlink()
    async with running(full_state):
        pass


def test_sigterm_during_a_long_sync_command_exits(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(60)
    mark = tmp_path / "finished"
    env = {
        **os.environ,
        "PYTHONPATH": str(TESTS_DIR),
        "LIFECYCLE_SIGNAL_PORT": str(listener.getsockname()[1]),
        "LIFECYCLE_MARK": str(mark),
    }
    state = tmp_path / "state"
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "local_daemon.cli",
            "serve",
            "lifecycle_registry:registry",
            "--state-dir",
            str(state),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        process = DaemonProcess.__new__(DaemonProcess)
        process.state_dir, process.process, process.port = state, daemon, 0
        port = process.wait_ready()
        caller = socket.create_connection(("127.0.0.1", port), timeout=60)
        caller.sendall(
            b"POST /rpc/hang HTTP/1.1\r\nHost: 127.0.0.1\r\nx-local-client: t\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        accepted, _ = listener.accept()  # the command is running now
        assert accepted.recv(16) == b"started"
        accepted.close()
        daemon.send_signal(signal.SIGTERM)
        # Bounded only as a hang guard: the command would run for an hour.
        _, err = daemon.communicate(timeout=60)
        caller.close()
    finally:
        listener.close()
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0, err
    assert b"closed with 1 synchronous command(s) still running" in err
    assert b"Traceback" not in err
    assert not mark.exists()
    assert sorted(p.name for p in state.iterdir()) == []


def test_serve_on_a_full_disk_exits_with_one_line_and_leaves_nothing(full_state: Path) -> None:
    state = full_state / "state"
    state.mkdir()
    _fill(full_state, 1)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "local_daemon.cli",
            "serve",
            "daemon_support:demo_registry",
            "--state-dir",
            str(state),
        ],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 69, result
    assert result.stderr == "local-daemon: cannot serve: No space left on device\n"
    assert list(state.iterdir()) == []
