"""The state dir's lock: held, it refuses a second holder; released (twice is fine), it can be
taken again, and it leaves no file behind for the next daemon to share."""

from __future__ import annotations

from pathlib import Path

import pytest

from local_daemon import DaemonStateError, daemon_paths
from local_daemon._pidfile import lock_state_dir


def test_lock_file_removed_by_its_holder_is_not_shared(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path / "state")
    lock = lock_state_dir(paths)
    with pytest.raises(DaemonStateError):
        lock_state_dir(paths)
    lock.release()
    lock.release()  # idempotent
    again = lock_state_dir(paths)
    again.release()
    assert list(paths.state_dir.iterdir()) == []
