"""`--attach`'s identity checks (`find_daemon`), on state files this test writes while holding
the state dir's lock the way a daemon does: no public way makes a daemon that lies in them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from local_daemon import daemon_paths, write_pid_file
from local_daemon._attach import AttachProblem, find_daemon
from local_daemon._pidfile import lock_state_dir


class TestFindDaemon:
    """The identity checks, on state files this test writes while holding the state dir's lock."""

    def _state(self, tmp_path: Path, *, lock: bool = True, **meta: Any) -> Path:
        paths = daemon_paths(tmp_path / "state")
        if lock:
            self._lock = lock_state_dir(paths)  # released when the test's tmp dir goes
        write_pid_file(paths, meta={"port": 9, "host": "127.0.0.1", "tool_prefix": "", **meta})
        return paths.state_dir

    def teardown_method(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is not None:
            lock.release()

    def test_a_pid_that_does_not_hold_the_lock_is_not_the_daemon(self, tmp_path: Path) -> None:
        state = self._state(tmp_path, lock=False)
        with pytest.raises(AttachProblem, match=r"does not hold daemon\.lock") as caught:
            find_daemon(daemon_paths(state))
        assert caught.value.kind == "unavailable"

    def test_a_daemon_without_mcp_is_refused(self, tmp_path: Path) -> None:
        state = self._state(tmp_path, tool_prefix=None)
        with pytest.raises(AttachProblem, match="serves no /mcp") as caught:
            find_daemon(daemon_paths(state))
        assert caught.value.kind == "refused"

    def test_a_daemon_off_loopback_is_refused(self, tmp_path: Path) -> None:
        state = self._state(tmp_path, host="192.0.2.10")
        with pytest.raises(AttachProblem, match="not on loopback") as caught:
            find_daemon(daemon_paths(state))
        assert caught.value.kind == "refused"

    def test_no_answer_on_the_port_is_no_daemon(self, tmp_path: Path) -> None:
        import socket

        with socket.socket() as sock:  # a port nobody listens on: bound, never listening
            sock.bind(("127.0.0.1", 0))
            state = self._state(tmp_path, port=sock.getsockname()[1])
            with pytest.raises(AttachProblem, match="no healthy daemon") as caught:
                find_daemon(daemon_paths(state), timeout=0.5)
        assert caught.value.kind == "unavailable"
