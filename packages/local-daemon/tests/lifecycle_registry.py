"""A registry for `local-daemon serve` whose one sync command outlives any shutdown grace."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from local_daemon import Registry

registry = Registry()


@registry.command
def hang() -> str:
    """Tell the test it started, then block for an hour, then leave a mark."""
    with socket.create_connection(("127.0.0.1", int(os.environ["LIFECYCLE_SIGNAL_PORT"]))) as s:
        s.sendall(b"started")
    time.sleep(3600)
    Path(os.environ["LIFECYCLE_MARK"]).write_text("finished")
    return "finished"
