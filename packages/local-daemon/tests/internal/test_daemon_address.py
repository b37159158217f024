"""How `health --state-dir` and `--attach` read where a daemon listens from its pid and
metadata files: the host rule (a wildcard answers on loopback, brackets dropped) and a missing
pid file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from local_daemon import DaemonStateError, daemon_paths, write_pid_file
from local_daemon._pidfile import DaemonAddress, read_daemon_address


@pytest.mark.parametrize(
    ("meta", "host"),
    [
        ({"port": 8765, "host": "127.0.0.1"}, "127.0.0.1"),
        ({"port": 8765}, "127.0.0.1"),  # a metadata file written before `host` was recorded
        ({"port": 8765, "host": "localhost"}, "localhost"),
        ({"port": 8765, "host": "::1"}, "::1"),
        ({"port": 8765, "host": "[::1]"}, "::1"),
        ({"port": 8765, "host": "0.0.0.0"}, "127.0.0.1"),  # a wildcard answers on loopback
        ({"port": 8765, "host": "::"}, "::1"),
        ({"port": 8765, "host": "192.0.2.7", "extra": [1]}, "192.0.2.7"),
    ],
)
def test_read_daemon_address(tmp_path: Path, meta: dict[str, object], host: str) -> None:
    paths = daemon_paths(tmp_path / "state")
    write_pid_file(paths, meta=meta)
    assert read_daemon_address(paths) == DaemonAddress(pid=os.getpid(), host=host, port=8765)


def test_read_daemon_address_of_a_started_daemon_file(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path)
    write_pid_file(paths, meta={"version": "1", "port": 1, "host": "127.0.0.1"})
    assert oct(paths.pid_file.stat().st_mode & 0o777) == oct(0o600)
    assert read_daemon_address(paths).port == 1
    paths.pid_file.unlink()
    with pytest.raises(DaemonStateError) as caught:
        read_daemon_address(paths)
    assert caught.value.problem == "missing"
