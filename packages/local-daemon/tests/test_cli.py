"""The `local-daemon` CLI as real subprocesses: serve, health, usage errors and exit codes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon_support import TESTS_DIR, DaemonProcess
from local_daemon import daemon_paths, write_pid_file
from local_daemon.cli import main


def cli(
    *args: str, timeout: float = 60, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "local_daemon.cli", *args],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR), **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_serve_health_and_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = DaemonProcess(state, "--version", "7.7.7")
    try:
        port = daemon.wait_ready()
        probe = cli("health", "--port", str(port))
        assert probe.returncode == 0, probe.stderr
        assert '"version": "7.7.7"' in probe.stdout
        assert f'"port": {port}' in probe.stdout
        daemon.process.send_signal(signal.SIGTERM)
        daemon.process.wait(timeout=30)
    finally:
        err = daemon.stop()
    assert daemon.process.returncode == 0, err
    assert not (state / "daemon.pid").exists()
    assert "Traceback" not in err


def test_serve_accepts_a_factory(tmp_path: Path) -> None:
    # `demo_registry` is a factory; `daemon_support.demo_registry` would also be a registry
    # once called, so both forms load.
    daemon = DaemonProcess(tmp_path / "s", target="daemon_support:demo_registry")
    try:
        daemon.wait_ready()
    finally:
        daemon.stop()
    assert daemon.process.returncode == 0


SERVE_USAGE = "usage: local-daemon serve MODULE:ATTR --state-dir DIR [--port N] [options]"
HEALTH_USAGE = "usage: local-daemon health (--port N | --state-dir DIR) [--host HOST] [--timeout S]"
TOP_USAGE = "usage: local-daemon [-h] [--version] COMMAND ..."
DEBUG_HINT = " (LOCAL_DAEMON_DEBUG=1 shows the traceback)"
OK = ["daemon_support:demo_registry", "--state-dir", "{tmp}/s"]

# A user's own modules, in the directory `serve` runs in: each fails to load its own way.
USER_MODULES = {
    "synerr.py": "import os\ndef broken(:\n",
    "namerr.py": "import os\n\nregistry = undefined_name\n",
    "dep.py": "import no_such_dependency_here\n",
    "boom.py": (
        "from daemon_support import CANARY\n\n\ndef make():\n    raise RuntimeError(CANARY)\n"
    ),
    "greet.py": "def greet(name):\n    return name\n\n\ndef hello():\n    return 'hi'\n",
    "plain.txt": "not a directory\n",
}

# (args, exact first stderr line after "local-daemon: ", exit code, exact second line or None).
BAD_INVOCATIONS: list[tuple[list[str], str, int, str | None]] = [
    ([], "missing command (serve, health, mcp-stdio, token, sessions, units)", 64, TOP_USAGE),
    (
        ["bogus"],
        "unknown command 'bogus' (serve, health, mcp-stdio, token, sessions, units)",
        64,
        TOP_USAGE,
    ),
    (["--bogus"], "the following arguments are required: COMMAND", 64, TOP_USAGE),
    # unknown flag
    (["serve", *OK, "--bogus"], "unrecognized arguments: --bogus", 64, SERVE_USAGE),
    (["serve", *OK, "--stat", "x"], "unrecognized arguments: --stat x", 64, SERVE_USAGE),
    (["health", "--port", "1", "extra"], "unrecognized arguments: extra", 64, HEALTH_USAGE),
    # missing argument
    (["serve"], "the following arguments are required: MODULE:ATTR, --state-dir", 64, SERVE_USAGE),
    (["serve", "m:r"], "the following arguments are required: --state-dir", 64, SERVE_USAGE),
    (["serve", *OK, "--port"], "argument --port: expected one argument", 64, SERVE_USAGE),
    (["health"], "health needs --port or --state-dir", 64, HEALTH_USAGE),
    (
        ["token", "ensure"],
        "the following arguments are required: PATH",
        64,
        "usage: local-daemon token ensure [-h] PATH",
    ),
    (
        ["mcp-stdio"],
        "mcp-stdio needs MODULE:ATTR or --attach DIR",
        64,
        "usage: local-daemon mcp-stdio (MODULE:ATTR | --attach DIR [--start MODULE:ATTR])"
        " [--tool-prefix PREFIX] [--version V]",
    ),
    # repeated flag
    (["serve", *OK, "--port", "1", "--port", "2"], "argument --port: given twice", 64, SERVE_USAGE),
    (["health", "--port", "1", "--port=1"], "argument --port: given twice", 64, HEALTH_USAGE),
    # wrong type or value
    (["serve", *OK, "--port", "abc"], "argument --port: invalid int value: 'abc'", 64, SERVE_USAGE),
    (["serve", *OK, "--port", "70000"], "--port must be 0 to 65535", 64, SERVE_USAGE),
    (
        ["health", "--timeout", "soon", "--port", "1"],
        "argument --timeout: invalid float value: 'soon'",
        64,
        HEALTH_USAGE,
    ),
    (["health", "--port", "0"], "--port must be 1 to 65535", 64, HEALTH_USAGE),
    (
        ["serve", *OK, "--watch-debounce", "nan"],
        "--watch-debounce must be 0 to 60 seconds",
        64,
        SERVE_USAGE,
    ),
    (
        ["serve", *OK, "--watch-debounce", "-1"],
        "--watch-debounce must be 0 to 60 seconds",
        64,
        SERVE_USAGE,
    ),
    (
        ["serve", *OK, "--log-level", "loud"],
        "argument --log-level: invalid choice: 'loud'"
        " (choose from 'debug', 'info', 'warning', 'error')",
        64,
        SERVE_USAGE,
    ),
    (
        ["serve", *OK, "--remote-host", "1.2.3.4"],
        "--remote-host needs --token-file, --tls-cert and --tls-key",
        64,
        SERVE_USAGE,
    ),
    (
        ["token", "login-code", "{tmp}/t", "--url", "http://x"],
        "--url must start with https://",
        64,
        "usage: local-daemon token login-code [-h] [--url URL] PATH",
    ),
    # MODULE:ATTR that does not load: the problem and where, one line, never a traceback
    (
        ["serve", "nocolon", "--state-dir", "s"],
        "expected MODULE:ATTR (e.g. mypackage.app:registry), got 'nocolon'",
        64,
        SERVE_USAGE,
    ),
    (
        ["serve", "no_such_module_here:x", "--state-dir", "s"],
        "cannot import 'no_such_module_here': no such module in {tmp} or on sys.path",
        64,
        None,
    ),
    (
        ["serve", "synerr:registry", "--state-dir", "s"],
        "cannot import 'synerr': SyntaxError: invalid syntax at synerr.py:2" + DEBUG_HINT,
        64,
        None,
    ),
    (
        ["serve", "namerr:registry", "--state-dir", "s"],
        "cannot import 'namerr': NameError at namerr.py:3" + DEBUG_HINT,
        64,
        None,
    ),
    (
        ["mcp-stdio", "dep:registry", "--tool-prefix", "p"],
        "cannot import 'dep': ModuleNotFoundError at dep.py:1" + DEBUG_HINT,
        64,
        None,
    ),
    (
        ["serve", "boom:make", "--state-dir", "s"],
        "the factory boom:make raised RuntimeError at boom.py:5" + DEBUG_HINT,
        64,
        None,
    ),
    (
        ["serve", "daemon_support:nothing", "--state-dir", "s"],
        "'daemon_support' has no attribute 'nothing'",
        64,
        None,
    ),
    (
        ["serve", "daemon_support:CANARY", "--state-dir", "s"],
        "daemon_support:CANARY is not a command registry (needs invoke_command and commands)",
        64,
        None,
    ),
    (
        ["serve", "greet:greet", "--state-dir", "s"],
        "greet:greet is a function that takes arguments, not a command registry or a factory"
        " returning one (give the registry, e.g. mymodule:registry)",
        64,
        None,
    ),
    (
        ["mcp-stdio", "greet:hello"],
        "greet:hello returned str, which is not a command registry"
        " (needs invoke_command and commands)",
        64,
        None,
    ),
    (
        ["serve", "greet.py:registry", "--state-dir", "s"],
        "give the module's name without .py: greet:registry, not greet.py:registry",
        64,
        None,
    ),
    (
        ["serve", "./app/greet.py:registry", "--state-dir", "s"],
        "give the module's name without .py: app.greet:registry, not ./app/greet.py:registry",
        64,
        None,
    ),
    # a state dir that cannot be one: the path and what to do, not "File exists"
    (
        ["serve", "daemon_support:demo_registry", "--state-dir", "{tmp}/plain.txt"],
        "cannot use {tmp}/plain.txt as the state dir: not a directory;"
        " give --state-dir a directory, or a path to create",
        78,
        None,
    ),
    (
        ["serve", "daemon_support:demo_registry", "--state-dir", "{tmp}/plain.txt/s"],
        "cannot use {tmp}/plain.txt/s as the state dir: not a directory"
        " ({tmp}/plain.txt is not one); give --state-dir a directory, or a path to create",
        78,
        None,
    ),
    # a watch root that is no directory: the path and what to do, not a traceback or exit 70
    (
        ["serve", "daemon_support:demo_registry", "--state-dir", "s", "--watch-root", "gone"],
        "watch root gone does not exist: create the directory before starting the daemon"
        " (--watch-root)",
        78,
        None,
    ),
    (
        ["serve", "daemon_support:demo_registry", "--state-dir", "s", "--watch-root", "plain.txt"],
        "watch root plain.txt is not a directory: point the watch at a directory (--watch-root)",
        78,
        None,
    ),
]


@pytest.mark.parametrize(
    ("args", "problem", "code", "usage"),
    BAD_INVOCATIONS,
    ids=[" ".join(row[0]) or "(none)" for row in BAD_INVOCATIONS],
)
def test_a_bad_invocation_names_its_problem(
    args: list[str], problem: str, code: int, usage: str | None, tmp_path: Path
) -> None:
    for name, text in USER_MODULES.items():
        (tmp_path / name).write_text(text)
    result = cli(*(arg.format(tmp=tmp_path) for arg in args), cwd=tmp_path)
    lines = result.stderr.splitlines()
    assert (result.returncode, result.stdout) == (code, ""), result.stderr
    assert lines[0] == f"local-daemon: {problem.format(tmp=tmp_path)}"
    # The problem, then the command's one-line usage (none when the line was fine but the
    # user's module was not).
    assert lines[1:] == ([] if usage is None else [usage]), result.stderr
    assert "Traceback" not in result.stderr
    assert "CANARY-" not in result.stderr
    assert not (tmp_path / "s" / "daemon.pid").exists()


def test_debug_env_adds_the_traceback_of_a_users_failure(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text(USER_MODULES["boom.py"])
    result = cli(
        "serve", "boom:make", "--state-dir", "s", cwd=tmp_path, env={"LOCAL_DAEMON_DEBUG": "1"}
    )
    assert result.returncode == 64
    assert "Traceback" in result.stderr
    assert result.stderr.endswith(
        "local-daemon: the factory boom:make raised RuntimeError at boom.py:5\n"
    )


def test_token_ensure_makes_missing_parents_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "token"
    result = cli("token", "ensure", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{path}\n", "")
    modes = {p.name: p.stat().st_mode & 0o777 for p in (path.parent.parent, path.parent, path)}
    # Every directory the command made is 0700, like the state dir; `mkdir -p` would give 0755.
    assert modes == {"new": 0o700, "deeper": 0o700, "token": 0o600}


@pytest.mark.parametrize(("level", "shown"), [(None, False), ("info", True)])
def test_the_sdk_logs_info_only_when_asked(tmp_path: Path, level: str | None, shown: bool) -> None:
    # `loud_registry` sets up root logging at INFO on import, as applications often do; the MCP
    # SDK's session manager logs an INFO line as the daemon starts.
    extra = ["--log-level", level] if level else []
    daemon = DaemonProcess(
        tmp_path / "s", "--tool-prefix", "t", *extra, target="loud_registry:registry"
    )
    try:
        daemon.wait_ready()
    finally:
        err = daemon.stop()
    assert ("StreamableHTTP session manager" in err) is shown, err
    assert "local-daemon: INFO serving http://127.0.0.1:" in err


@pytest.mark.parametrize(
    "args",
    [
        ["-h"],
        ["--help"],
        ["serve", "-h"],
        ["serve", "m:r", "--state-dir", "s", "--help"],
        ["health", "-h"],
        ["mcp-stdio", "-h"],
        ["token", "-h"],
        ["token", "login-code", "--help"],
    ],
)
def test_h_and_help_print_the_help_and_exit_0(args: list[str], tmp_path: Path) -> None:
    result = cli(*args, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: local-daemon")
    assert "-h, --help" in result.stdout


@pytest.mark.parametrize("module", ["local_daemon", "local_daemon.cli"])
def test_version_and_python_m(module: str, tmp_path: Path) -> None:
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"local-daemon {version('local-daemon')}\n"
    assert cli("bogus", cwd=tmp_path).stderr.startswith("local-daemon: unknown command")


def test_serve_logs_where_it_listens(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path / "state")
    try:
        port = daemon.wait_ready()
    finally:
        err = daemon.stop()
    assert f"local-daemon: INFO serving http://127.0.0.1:{port}/" in err


def test_health_without_a_daemon_is_69() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = cli("health", "--port", str(port), "--timeout", "0.5")
    assert result.returncode == 69
    assert "no healthy daemon" in result.stderr


def test_health_finds_the_port_in_the_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    daemon = DaemonProcess(state, "--version", "7.7.8")
    try:
        port = daemon.wait_ready()
        by_port = cli("health", "--port", str(port))
        by_state = cli("health", "--state-dir", str(state))
        # --port wins: a state dir that names nothing is not read at all.
        port_wins = cli("health", "--state-dir", str(tmp_path / "nothing"), "--port", str(port))
        # A state dir naming a live pid (this test's) whose port another daemon answers on.
        other = daemon_paths(tmp_path / "other")
        write_pid_file(other, os.getpid(), meta={"port": port, "host": "127.0.0.1"})
        impostor = cli("health", "--state-dir", str(other.state_dir))
    finally:
        daemon.stop()
    for result in (by_port, by_state, port_wins):
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    documents = [json.loads(result.stdout) for result in (by_port, by_state, port_wins)]
    for document in documents:
        del document["uptime_ms"]
    assert documents[0] == documents[1] == documents[2]
    assert (documents[1]["pid"], documents[1]["port"]) == (daemon.process.pid, port)
    assert documents[1]["version"] == "7.7.8"
    assert impostor.returncode == 69
    assert impostor.stdout == ""
    assert impostor.stderr == (
        f"local-daemon: the daemon on 127.0.0.1:{port} is not process {os.getpid()},"
        " which daemon.pid names\n"
    )


Setup = Callable[[Path], None]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _files(pid: object = None, meta: object = None, *, raw_meta: str | None = None) -> Setup:
    """Write daemon.pid (and daemon.meta.json) as the daemon does: 0600 regular files."""

    def setup(state: Path) -> None:
        state.mkdir(exist_ok=True)
        alive = os.getpid()
        pid_text = f"{alive if pid is None else pid}\n"
        (state / "daemon.pid").write_text(pid_text)
        os.chmod(state / "daemon.pid", 0o600)
        if meta is not None or raw_meta is not None:
            text = raw_meta if raw_meta is not None else json.dumps(meta)
            (state / "daemon.meta.json").write_text(text)
            os.chmod(state / "daemon.meta.json", 0o600)

    return setup


def _then(first: Setup, second: Callable[[Path], object]) -> Setup:
    def setup(state: Path) -> None:
        first(state)
        second(state)

    return setup


def _swap_for_symlink(name: str) -> Callable[[Path], None]:
    def swap(state: Path) -> None:
        (state / name).rename(state / f"real-{name}")
        (state / name).symlink_to(state / f"real-{name}")

    return swap


def _chown_away(state: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    os.chown(state / "daemon.pid", 65534, 65534)


_ALIVE = os.getpid()
_DEAD = _dead_pid()
_NO_LISTENER = _free_port()
_GOOD = {"pid": _ALIVE, "host": "127.0.0.1"}

# (row id, state dir setup, extra flags, exit code, stderr after "local-daemon: ").
HEALTH_FAILURES: list[tuple[str, Setup | None, list[str], int, str]] = [
    ("no state dir", None, [], 69, "no daemon is running for {state} (no daemon.pid)"),
    (
        "no pid file",
        lambda s: s.mkdir(),
        [],
        69,
        "no daemon is running for {state} (no daemon.pid)",
    ),
    (
        "pid file a symlink",
        _then(_files(meta={**_GOOD, "port": 1}), _swap_for_symlink("daemon.pid")),
        [],
        78,
        "{state}/daemon.pid is a symlink",
    ),
    (
        "pid file a directory",
        lambda s: (s / "daemon.pid").mkdir(parents=True),
        [],
        78,
        "{state}/daemon.pid is not a regular file",
    ),
    (
        "pid file of another owner",
        _then(_files(meta={**_GOOD, "port": 1}), _chown_away),
        [],
        78,
        "{state}/daemon.pid is owned by uid 65534, not by this user",
    ),
    (
        "pid file writable by others",
        _then(_files(), lambda s: os.chmod(s / "daemon.pid", 0o666)),
        [],
        78,
        "{state}/daemon.pid is writable by group or others (mode 0666)",
    ),
    (
        "pid file too large",
        _files(pid="1" * 70_000),
        [],
        78,
        "{state}/daemon.pid is larger than 65536 bytes",
    ),
    ("pid file garbage", _files(pid="abc"), [], 78, "{state}/daemon.pid does not hold a pid"),
    ("pid zero", _files(pid="0"), [], 78, "{state}/daemon.pid does not hold a pid"),
    ("pid not ascii", _files(pid="١٢"), [], 78, "{state}/daemon.pid does not hold a pid"),
    (
        "stale pid file",
        _files(pid=_DEAD, meta={"port": 1}),
        [],
        69,
        f"{{state}}/daemon.pid is stale: process {_DEAD} is not running",
    ),
    (
        "no meta file",
        _files(),
        [],
        69,
        "{state} has no daemon.meta.json, so the daemon's port is unknown",
    ),
    (
        "meta a symlink",
        _then(_files(meta={**_GOOD, "port": 1}), _swap_for_symlink("daemon.meta.json")),
        [],
        78,
        "{state}/daemon.meta.json is a symlink",
    ),
    (
        "meta garbage",
        _files(raw_meta='{"port": 8'),
        [],
        78,
        "{state}/daemon.meta.json is not a JSON object",
    ),
    ("meta a list", _files(meta=[1]), [], 78, "{state}/daemon.meta.json is not a JSON object"),
    (
        "meta deeply nested",
        _files(raw_meta="[" * 60_000),
        [],
        78,
        "{state}/daemon.meta.json is not a JSON object",
    ),
    (
        "meta names another pid",
        _files(meta={"pid": _ALIVE + 1, "port": 1}),
        [],
        69,
        f"{{state}}/daemon.meta.json does not name process {_ALIVE} as daemon.pid does"
        " (a daemon may be starting or stopping)",
    ),
    *[
        (
            f"meta port {port!r}",
            _files(meta={**_GOOD, "port": port}) if port != "absent" else _files(meta=_GOOD),
            [],
            78,
            "{state}/daemon.meta.json names no port from 1 to 65535",
        )
        for port in (0, 65536, -1, "8080", True, 80.0, None, "absent")
    ],
    (
        "meta host a name",
        _files(meta={**_GOOD, "port": 1, "host": "daemon.example"}),
        [],
        78,
        "{state}/daemon.meta.json names a host that is not an IP address",
    ),
    (
        "meta host not a string",
        _files(meta={**_GOOD, "port": 1, "host": 127}),
        [],
        78,
        "{state}/daemon.meta.json names a host that is not an IP address",
    ),
    (
        "nothing listening",
        _files(meta={**_GOOD, "port": _NO_LISTENER}),
        ["--timeout", "0.5"],
        69,
        f"no healthy daemon on 127.0.0.1:{_NO_LISTENER}",
    ),
]


@pytest.mark.parametrize(
    ("setup", "flags", "code", "message"),
    [pytest.param(*row[1:], id=row[0]) for row in HEALTH_FAILURES],
)
def test_health_refuses_what_the_state_dir_holds(
    setup: Setup | None,
    flags: list[str],
    code: int,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    state = tmp_path / "state"
    if setup is not None:
        setup(state)
    with pytest.raises(SystemExit) as caught:
        main(["health", "--state-dir", str(state), *flags])
    out, err = capsys.readouterr()
    assert (caught.value.code, out) == (code, "")
    assert err == f"local-daemon: {message.format(state=state)}\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "health needs --port or --state-dir"),
        (["--port", "0"], "--port must be 1 to 65535"),
        (["--port", "65536"], "--port must be 1 to 65535"),
        (["--port", "-5", "--state-dir", "x"], "--port must be 1 to 65535"),
    ],
)
def test_health_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["health", *args])
    out, err = capsys.readouterr()
    assert (caught.value.code, out) == (64, "")
    assert err.startswith(f"local-daemon: {message}\n{HEALTH_USAGE}")


def test_port_in_use_is_69(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli(
            "serve",
            "daemon_support:demo_registry",
            "--state-dir",
            str(tmp_path),
            "--port",
            str(port),
        )
    assert result.returncode == 69, result.stderr
    assert "already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_listen_fds_is_78(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.environ['LISTEN_PID'] = str(os.getpid()); "
            "os.environ['LISTEN_FDS'] = '2'; "
            "sys.argv = ['local-daemon', 'serve', 'daemon_support:demo_registry', '--state-dir', "
            f"{str(tmp_path)!r}]; "
            "from local_daemon.cli import main; main()",
        ],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 78, result.stderr
    assert "LISTEN_FDS" in result.stderr


def test_token_group_is_mounted(tmp_path: Path) -> None:
    token = tmp_path / "token"
    result = cli("token", "ensure", str(token))
    assert result.returncode == 0, result.stderr
    assert token.exists()
