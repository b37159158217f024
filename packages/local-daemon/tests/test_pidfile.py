"""Pid and meta files, process identity, probe_health and systemd_listen_fd."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from local_daemon import (
    daemon_paths,
    get_process_command,
    is_process_alive,
    probe_health,
    read_pid_file,
    remove_pid_file,
    systemd_listen_fd,
    write_pid_file,
)


def test_paths_names(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path)
    assert paths.pid_file == tmp_path / "daemon.pid"
    assert paths.meta_file == tmp_path / "daemon.meta.json"


def test_write_read_remove(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path / "nested" / "state")
    assert read_pid_file(paths) is None
    write_pid_file(paths, 4242, meta={"port": 1})
    assert read_pid_file(paths) == 4242
    assert json.loads(paths.meta_file.read_text()) == {"port": 1, "pid": 4242}
    assert [p.name for p in paths.state_dir.iterdir() if p.name.startswith(".")] == []
    assert not remove_pid_file(paths, 4243), "another pid's file stays"
    assert paths.pid_file.exists()
    assert remove_pid_file(paths, 4242)
    assert not paths.pid_file.exists()
    assert not paths.meta_file.exists()
    assert not remove_pid_file(paths, 4242)


def test_successor_file_survives(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path)
    write_pid_file(paths, 100)
    write_pid_file(paths, 200)  # the successor replaced it atomically
    assert not remove_pid_file(paths, 100)
    assert read_pid_file(paths) == 200


@pytest.mark.parametrize("text", ["", "abc", "-5", "0", "12 34", "١٢"])
def test_malformed_pid_file(tmp_path: Path, text: str) -> None:
    paths = daemon_paths(tmp_path)
    paths.pid_file.write_text(text)
    assert read_pid_file(paths) is None


def test_process_identity() -> None:
    assert is_process_alive(os.getpid())
    assert not is_process_alive(0)
    assert not is_process_alive(-1)
    command = get_process_command(os.getpid())
    assert command is not None
    assert "python" in command
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    assert not is_process_alive(child.pid)
    assert get_process_command(child.pid) is None


def test_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for _ in range(500):  # bounded: wait until it has exited but is not reaped
            stat = Path(f"/proc/{child.pid}/stat").read_text()
            if stat.rpartition(")")[2].split()[0] == "Z":
                break
            threading.Event().wait(0.01)
        assert not is_process_alive(child.pid)
    finally:
        child.wait(timeout=30)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        answers = {"/health": (200, b'{"ok": true}')}
        status, body = answers.get(self.path, (404, b""))
        if getattr(self.server, "starting", False):
            status, body = 503, b'{"ok": false, "starting": true}'
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.mark.parametrize("starting", [False, True])
def test_probe_health(starting: bool) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    server.starting = starting  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        result = probe_health(server.server_port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert result == (None if starting else {"ok": True})


def test_probe_health_nothing_listening() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert probe_health(port, timeout=0.5) is None


def test_systemd_listen_fd() -> None:
    env = {"LISTEN_PID": "77", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x", "OTHER": "y"}
    assert systemd_listen_fd(dict(env), 78) is None, "passed to another pid"
    taken = dict(env)
    assert systemd_listen_fd(taken, 77) == 3
    assert taken == {"OTHER": "y"}
    assert systemd_listen_fd({}, 77) is None
    with pytest.raises(ValueError, match="LISTEN_FDS"):
        systemd_listen_fd({"LISTEN_PID": "77", "LISTEN_FDS": "2"}, 77)


def test_meta_is_json(tmp_path: Path) -> None:
    paths = daemon_paths(tmp_path)
    write_pid_file(paths, meta={"version": "1"})
    assert json.loads(paths.meta_file.read_text())["pid"] == os.getpid()
