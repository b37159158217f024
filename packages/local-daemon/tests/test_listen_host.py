"""A non-loopback `host` without a gate is refused (library and CLI) unless opted in by name.

Nothing here listens outside loopback: the refusals happen before anything binds, the inherited
socket is bound but never listening, and the opt-in is shown inside a network namespace made here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_support import TESTS_DIR, demo_registry, running
from local_daemon import RemoteBindError, start_daemon
from netns_support import run_in_namespace

REFUSED_HOSTS = [
    "0.0.0.0",
    "::",
    "[::]",
    "::ffff:0.0.0.0",
    "192.0.2.10",
    "10.1.2.3",
    "fe80::1",
    "2001:db8::1",
    "daemon.example",
    "localhost.example",
]


@pytest.mark.parametrize("host", REFUSED_HOSTS)
async def test_non_loopback_host_is_refused_before_anything_binds(
    host: str, tmp_path: Path
) -> None:
    with pytest.raises(RemoteBindError) as info:
        await start_daemon(registry=demo_registry(), version="1", state_dir=tmp_path, host=host)
    message = str(info.value)
    assert repr(host) in message
    assert "remote listener" in message
    assert "insecure_unauthenticated_host=True" in message
    assert list(tmp_path.iterdir()) == []  # no pid file, no meta file


async def test_loopback_host_still_serves(tmp_path: Path) -> None:
    async with running(tmp_path, host="127.0.0.2") as handle:
        assert handle.port > 0


async def test_inherited_non_loopback_socket_is_refused(tmp_path: Path) -> None:
    # Bound to the wildcard but never listening: nothing can connect to it.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("0.0.0.0", 0))
        fd = os.dup(sock.fileno())
    with pytest.raises(RemoteBindError) as info:
        await start_daemon(registry=demo_registry(), version="1", state_dir=tmp_path, listen_fd=fd)
    assert "inherited socket's address '0.0.0.0'" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def _cli(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "local_daemon.cli", "serve", "daemon_support:demo_registry",
         "--state-dir", str(state), *args],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize("argv", [["--host", "0.0.0.0"], ["--host=::"], ["--host", "192.0.2.9"]])
def test_cli_refuses_a_non_loopback_host(argv: list[str], tmp_path: Path) -> None:
    proc = _cli(*argv, state=tmp_path / "state")
    assert proc.returncode == 78, proc.stderr
    assert proc.stderr.startswith("local-daemon: refusing to serve on host ")
    assert "--remote-host" in proc.stderr
    assert "--insecure-unauthenticated-host" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "state" / "daemon.pid").exists()


def test_help_lists_the_opt_in_flag(tmp_path: Path) -> None:
    # `serve --help` lists the flag with its warning.
    proc = subprocess.run(
        [sys.executable, "-m", "local_daemon.cli", "serve", "--help"],
        env={**os.environ, "COLUMNS": "300", "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0
    assert "--insecure-unauthenticated-host" in proc.stdout
    assert "--no-insecure" not in proc.stdout


_OPT_IN_SCRIPT = r"""
set -e
"$PY" -m local_daemon.cli serve daemon_support:demo_registry --state-dir "$STATE" \
    --host 192.0.2.10 --insecure-unauthenticated-host --log-level warning 2>"$STATE.err" &
pid=$!
"$PY" - <<'EOF'
import json, os, time, urllib.request
from local_daemon import daemon_paths, read_pid_file
paths = daemon_paths(os.environ["STATE"])
for _ in range(600):
    meta = json.loads(paths.meta_file.read_text()) if read_pid_file(paths) else None
    if meta:
        break
    time.sleep(0.05)
port = meta["port"]
with urllib.request.urlopen(f"http://192.0.2.10:{port}/health", timeout=10) as r:
    print(json.dumps({"status": r.status, "host": meta["host"]}))
EOF
kill -TERM $pid
wait $pid
"""


@pytest.mark.slow
def test_opt_in_serves_a_non_loopback_host_with_a_loud_warning(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = run_in_namespace(
        ["sh", "-c", _OPT_IN_SCRIPT],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR), "PY": sys.executable,
             "STATE": str(state)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == '{"status": 200, "host": "192.0.2.10"}'
    err = Path(f"{state}.err").read_text(encoding="utf-8")
    assert "WITHOUT any credential (insecure_unauthenticated_host)" in err
