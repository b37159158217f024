"""End to end: the real `start_daemon(remote=...)` and `local-daemon serve --remote-host ...`.

Each scenario runs inside a private network namespace (`unshare -n`, 192.0.2.10 on its lo), so
nothing binds or sends outside it. Run as a script (`python test_remote_daemon.py SCENARIO
WORKDIR`) this file plays the namespace side and prints its observations as one JSON line.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import gate_support
from local_daemon import (
    AuthRecord,
    Registry,
    RemoteOptions,
    daemon_paths,
    mint_login_code,
    start_daemon,
)
from netns_support import observe_script

pytestmark = pytest.mark.slow

THIS = Path(__file__).resolve()
TESTS_DIR = THIS.parent
ADDR = gate_support.NS_SERVER_ADDR
NAME = "daemon.test"
JSON_CLIENT = {"x-local-client": "tests", "Content-Type": "application/json"}
# What a stock MCP client sends: no x-local-client.
MCP_POST = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
_TIMEOUT = 10.0


# --- the namespace side ---------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class _Client:
    """Plain and TLS requests to the daemon; every answer is kept to look for the secret."""

    port: int
    ca_pem: bytes
    seen: list[str] = field(default_factory=list)

    def _keep(self, resp: http.client.HTTPResponse) -> tuple[int, dict[str, str], str]:
        text = resp.read().decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in resp.getheaders()}
        self.seen.append(f"{resp.status} {headers!r} {text}")
        return resp.status, headers, text

    def request(
        self,
        host: str,
        method: str,
        path: str,
        headers: dict[str, str] | None = None,
        body: Any = None,
        *,
        tls: bool = True,
        host_header: str | None = None,
    ) -> tuple[int, dict[str, str], str]:
        conn: http.client.HTTPConnection
        if tls:
            ctx = ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))
            conn = http.client.HTTPSConnection(host, self.port, context=ctx, timeout=_TIMEOUT)
        else:
            conn = http.client.HTTPConnection(host, self.port, timeout=_TIMEOUT)
        data = None if body is None else json.dumps(body).encode()
        all_headers = {"Host": f"{host_header or host}:{self.port}", **(headers or {})}
        try:
            conn.request(method, path, body=data, headers=all_headers)
            return self._keep(conn.getresponse())
        finally:
            conn.close()

    def plain_http_to_tls(self) -> str:
        """Send plain HTTP to the TLS port; return the first bytes of whatever comes back."""
        with socket.create_connection((ADDR, self.port), timeout=_TIMEOUT) as sock:
            sock.sendall(f"GET /health HTTP/1.1\r\nHost: {ADDR}:{self.port}\r\n\r\n".encode())
            data = b""
            with contextlib.suppress(OSError):
                while len(data) < 4096:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
        self.seen.append(data.decode("latin-1"))
        return data[:5].decode("latin-1")


def _refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=_TIMEOUT):
            return False
    except ConnectionRefusedError:
        return True


def _observe(client: _Client, token_file: Path, command: str) -> dict[str, Any]:
    """Talk to both listeners of one running daemon on one port and record the answers."""
    secret = gate_support.secret_of(token_file)
    port = client.port
    out: dict[str, Any] = {}
    rpc = f"/rpc/{command}"

    # Loopback: plain HTTP, no credential, `/mcp` served.
    status, _, text = client.request("127.0.0.1", "POST", rpc, JSON_CLIENT, {}, tls=False)
    out["loopback_rpc"] = [status, json.loads(text)]
    out["loopback_health"] = client.request("127.0.0.1", "GET", "/health", tls=False)[0]
    status, _, text = client.request(
        "127.0.0.1",
        "POST",
        "/mcp",
        {**JSON_CLIENT, "Accept": "application/json, text/event-stream"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        tls=False,
    )
    tools = json.loads(text)["result"]["tools"] if status == 200 else []
    out["loopback_mcp"] = [status, sorted(tool["name"] for tool in tools)]
    # The remote address's Host is not loopback's to answer.
    out["loopback_remote_host"] = client.request(
        "127.0.0.1", "GET", "/health", tls=False, host_header=ADDR
    )[0]

    # Remote: TLS only, its own allowlist, then the gate.
    out["plain_http_reply"] = client.plain_http_to_tls()
    out["localhost_host"] = client.request(ADDR, "GET", "/health", host_header="localhost")[0]
    out["foreign_host_login"] = client.request(ADDR, "GET", "/auth/login", host_header="evil.test")[
        0
    ]
    out["no_credential_health"] = client.request(ADDR, "GET", "/health")[0]
    out["no_credential_rpc"] = client.request(ADDR, "POST", rpc, JSON_CLIENT, {})[0]
    out["no_credential_mcp"] = client.request(ADDR, "POST", "/mcp", JSON_CLIENT, {})[0]
    bearer = {"Authorization": f"Bearer {secret}"}
    out["wrong_bearer_rpc"] = client.request(
        ADDR, "POST", rpc, {**JSON_CLIENT, "Authorization": "Bearer not-the-secret"}, {}
    )[0]
    out["bearer_health"] = client.request(ADDR, "GET", "/health", bearer)[0]
    status, _, text = client.request(ADDR, "POST", rpc, {**JSON_CLIENT, **bearer}, {})
    out["bearer_rpc"] = [status, json.loads(text)]
    status, _, text = client.request(ADDR, "POST", "/mcp", {**MCP_POST, **bearer}, TOOLS_LIST)
    tools = json.loads(text)["result"]["tools"] if status == 200 else []
    out["bearer_mcp"] = [status, sorted(tool["name"] for tool in tools)]
    for name, authorization in (("no_bearer_mcp", None), ("wrong_bearer_mcp", "Bearer wrong")):
        headers = dict(MCP_POST)
        if authorization is not None:
            headers["Authorization"] = authorization
        status, _, text = client.request(ADDR, "POST", "/mcp", headers, TOOLS_LIST)
        out[name] = [status, json.loads(text)]
    status, _, text = client.request(
        ADDR, "POST", rpc, {**JSON_CLIENT, **bearer}, {}, host_header=NAME
    )
    out["bearer_rpc_by_name"] = status

    code = mint_login_code(token_file)
    origin = {"Origin": f"https://{ADDR}:{port}", "Content-Type": "application/json"}
    status, headers, _ = client.request(ADDR, "POST", "/auth/login", origin, {"code": code})
    out["login_post"] = status
    cookie = headers.get("set-cookie", "")
    out["cookie_name"] = cookie.split("=", 1)[0]
    cookie_pair = cookie.split(";", 1)[0]
    status, _, text = client.request(ADDR, "POST", rpc, {**JSON_CLIENT, "Cookie": cookie_pair}, {})
    out["cookie_rpc"] = [status, json.loads(text)]
    out["cookie_mcp"] = client.request(
        ADDR, "POST", "/mcp", {**MCP_POST, "Cookie": cookie_pair}, TOOLS_LIST
    )[0]
    # The cookie is a credential for the remote listener; it must not be the secret itself.
    out["cookie_is_secret"] = secret in cookie_pair
    out["leaked"] = secret in "\n".join(client.seen)
    return out


def _workdir_setup(workdir: Path) -> tuple[Path, bytes, RemoteOptions]:
    setup = gate_support.remote_setup(workdir, NAME, allowed_hosts=(NAME,))
    return setup.token_file, setup.ca_pem, setup.remote


def _context_registry(calls: list[dict[str, Any]]) -> tuple[Registry, Any]:
    registry = Registry()

    @registry.command
    async def whoami(context: Any) -> Any:
        """Return the context the daemon built for this call."""
        return context

    def create_context(surface: str, auth: AuthRecord | None) -> dict[str, Any]:
        record = None
        if auth is not None:
            record = {
                "type": type(auth).__name__,
                "credential": auth.credential,
                "peer_local": auth.peer_local,
            }
        calls.append({"surface": surface, "auth": record})
        return {"surface": surface, "auth": record}

    return registry, create_context


async def _remote_port_taken(
    registry: Registry, remote: RemoteOptions, state_dir: Path
) -> dict[str, Any]:
    """Both or neither: the remote side's port is taken, so loopback must not stay bound."""
    from local_daemon import RemoteBindError

    with socket.socket() as taken:
        taken.bind((ADDR, 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        error = ""
        try:
            handle = await start_daemon(
                registry=registry, version="9.9.9", state_dir=state_dir, port=port, remote=remote
            )
        except RemoteBindError as exc:
            error = str(exc)
        else:
            await handle.close()
        return {
            "taken_error": error,
            "taken_loopback_refused": _refused("127.0.0.1", port),
            "taken_pid_file": daemon_paths(state_dir).pid_file.exists(),
        }


async def _scenario_daemon(workdir: Path) -> dict[str, Any]:
    """Start the real daemon with a remote listener, observe both listeners, then close it."""
    with gate_support.capture_logs() as records:
        token_file, ca_pem, remote = _workdir_setup(workdir)
        calls: list[dict[str, Any]] = []
        registry, create_context = _context_registry(calls)
        state_dir = workdir / "state"
        out: dict[str, Any] = await _remote_port_taken(registry, remote, workdir / "taken")
        handle = await start_daemon(
            registry=registry,
            version="9.9.9",
            state_dir=state_dir,
            create_context=create_context,
            tool_prefix="x",
            remote=remote,
        )
        try:
            paths = daemon_paths(state_dir)
            out["pid_file"] = paths.pid_file.read_text().strip() == str(os.getpid())
            out["meta_remote"] = json.loads(paths.meta_file.read_text())["remote"]
            client = _Client(port=handle.port, ca_pem=ca_pem)
            out.update(await asyncio.to_thread(_observe, client, token_file, "whoami"))
            out["sdk_client"] = await _sdk_client(handle.port, ca_pem, token_file)
            out["calls"] = calls
        finally:
            await handle.close()
        out["pid_file_after_close"] = paths.pid_file.exists()
        out["loopback_refused_after_close"] = _refused("127.0.0.1", handle.port)
        out["remote_refused_after_close"] = _refused(ADDR, handle.port)
    out["log_lines"] = len(records.lines)
    out["log_leaked"] = records.holds(gate_support.secret_of(token_file))
    task_files = sorted((state_dir / "tasks").glob("*.json"))
    out["task_files"] = len(task_files)
    secret = gate_support.secret_of(token_file).encode()
    out["task_files_leaked"] = any(secret in path.read_bytes() for path in task_files)
    return out


async def _sdk_client(port: int, ca_pem: bytes, token_file: Path) -> dict[str, Any]:
    """The `mcp` package's own streamable-HTTP client, over TLS with the bearer, in both eras."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from mcp_task_client import TasksExtension

    ctx = ssl.create_default_context(cadata=ca_pem.decode("ascii"))
    headers = {"Authorization": f"Bearer {gate_support.secret_of(token_file)}"}
    out: dict[str, Any] = {}
    # legacy: the initialize handshake (the daemon's fast path); auto: the 2026-07-28 era (the
    # SDK's own transport).
    # tasks: the 2026-07-28 era with the tasks extension, so the call runs as a task.
    for mode in ("legacy", "auto", "tasks"):
        async with httpx2.AsyncClient(headers=headers, verify=ctx, timeout=_TIMEOUT) as http:
            transport = streamable_http_client(f"https://{ADDR}:{port}/mcp", http_client=http)
            extensions = [TasksExtension()] if mode == "tasks" else None
            era = "auto" if mode == "tasks" else mode
            async with Client(transport, mode=era, extensions=extensions) as client:
                listed = await client.list_tools()
                called = await client.call_tool("x_whoami", {})
        related = (called.meta or {}).get("io.modelcontextprotocol/related-task")
        out[mode] = {
            "tools": sorted(tool.name for tool in listed.tools),
            "is_error": called.is_error,
            "structured": called.structured_content,
            "task": related is not None,
        }
    return out


def _cli_program() -> list[str]:
    script = Path(sys.executable).parent / "local-daemon"
    return [str(script)] if script.exists() else [sys.executable, "-m", "local_daemon.cli"]


def _two_devices_one_revoked(client: _Client, token_file: Path, state_dir: Path) -> dict[str, Any]:
    """Sign in a phone and a laptop, revoke the phone with `local-daemon sessions revoke`."""
    cookies: dict[str, str] = {}
    for device in ("Phone/1", "Laptop/2"):
        code = mint_login_code(token_file)
        origin = {
            "Origin": f"https://{ADDR}:{client.port}",
            "Content-Type": "application/json",
            "User-Agent": device,
        }
        _, headers, _ = client.request(ADDR, "POST", "/auth/login", origin, {"code": code})
        cookies[device] = headers["set-cookie"].split(";", 1)[0]
    where = ["--state-dir", str(state_dir)]
    listed = subprocess.run(
        [*_cli_program(), "sessions", "list", *where, "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    rows = json.loads(listed.stdout)
    phone = next(row for row in rows if row["user_agent"] == "Phone/1")
    revoked = subprocess.run(
        [*_cli_program(), "sessions", "revoke", phone["id"], *where],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    def status(cookie: str) -> int:
        return client.request(ADDR, "GET", "/health", {"Cookie": cookie})[0]

    return {
        "listed": sorted(row["user_agent"] for row in rows),
        "peer": phone["peer"],
        "revoke": [revoked.returncode, revoked.stdout.strip() == f"signed out {phone['id']}"],
        "phone_after": status(cookies["Phone/1"]),
        "laptop_after": status(cookies["Laptop/2"]),
        "cli_output": listed.stdout + listed.stderr + revoked.stdout + revoked.stderr,
    }


def _scenario_cli(workdir: Path) -> dict[str, Any]:
    """Run `local-daemon serve --remote-host ...` as a subprocess and observe it."""
    token_file, ca_pem, remote = _workdir_setup(workdir)
    state_dir = workdir / "state"
    paths = daemon_paths(state_dir)
    argv = [
        *_cli_program(),
        "serve",
        "daemon_support:demo_registry",
        "--state-dir",
        str(state_dir),
        "--tool-prefix",
        "x",
        "--log-level",
        "debug",
        "--remote-host",
        ADDR,
        "--token-file",
        str(token_file),
        "--tls-cert",
        str(remote.tls.cert_file),
        "--tls-key",
        str(remote.tls.key_file),
        "--remote-allowed-host",
        NAME,
    ]
    out: dict[str, Any] = {}
    with (workdir / "cli.out").open("wb") as stdout, (workdir / "cli.err").open("wb") as stderr:
        proc = subprocess.Popen(argv, cwd=TESTS_DIR, stdout=stdout, stderr=stderr)
        try:
            deadline = time.monotonic() + 30
            while not paths.pid_file.exists() and proc.poll() is None:
                assert time.monotonic() < deadline, "the daemon never wrote its pid file"
                time.sleep(0.05)
            out["started"] = proc.poll() is None
            if out["started"]:
                out["pid_file"] = paths.pid_file.read_text().strip() == str(proc.pid)
                port = int(json.loads(paths.meta_file.read_text())["port"])
                client = _Client(port=port, ca_pem=ca_pem)
                out.update(_observe(client, token_file, "whoami"))
                out["devices"] = _two_devices_one_revoked(client, token_file, state_dir)
                proc.send_signal(signal.SIGTERM)
                out["exit_code"] = proc.wait(timeout=30)
                out["pid_file_after_close"] = paths.pid_file.exists()
                out["loopback_refused_after_close"] = _refused("127.0.0.1", port)
                out["remote_refused_after_close"] = _refused(ADDR, port)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    captured = (workdir / "cli.out").read_text() + (workdir / "cli.err").read_text()
    out["captured_lines"] = len(captured.splitlines())
    out["captured_ready"] = "serving http://" in captured
    out["captured_leaked"] = gate_support.secret_of(token_file) in captured + json.dumps(out)
    return out


def main(argv: list[str]) -> int:
    """Run one namespace scenario and print its observations as JSON."""
    scenario, workdir = argv[0], Path(argv[1])
    if scenario == "daemon":
        out = asyncio.run(_scenario_daemon(workdir))
    elif scenario == "cli":
        out = _scenario_cli(workdir)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(out), flush=True)
    return 0


# --- the test side --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon_obs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return observe_script(THIS, tmp_path_factory.mktemp("remote-daemon"), "daemon")


@pytest.fixture(scope="module")
def cli_obs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return observe_script(THIS, tmp_path_factory.mktemp("remote-cli"), "cli")


def _assert_both_listeners(obs: dict[str, Any], *, context: bool) -> None:
    """The answers both the library and the CLI daemon must give."""
    status, envelope = obs["loopback_rpc"]
    assert status == 200
    assert envelope["ok"] is True
    if context:
        assert envelope["data"] == {"surface": "http", "auth": None}
    assert obs["loopback_health"] == 200
    assert obs["loopback_mcp"][0] == 200
    assert "x_whoami" in obs["loopback_mcp"][1]
    assert obs["loopback_remote_host"] == 403

    assert obs["plain_http_reply"] != "HTTP/"
    assert obs["localhost_host"] == 403
    assert obs["foreign_host_login"] == 403
    assert obs["no_credential_health"] == 401
    assert obs["no_credential_rpc"] == 401
    assert obs["no_credential_mcp"] == 401
    assert obs["wrong_bearer_rpc"] == 401
    assert obs["bearer_health"] == 200
    status, envelope = obs["bearer_rpc"]
    assert status == 200
    assert envelope["ok"] is True
    if context:
        assert envelope["data"] == {
            "surface": "http",
            "auth": {"type": "AuthRecord", "credential": "bearer", "peer_local": True},
        }
    status, tools = obs["bearer_mcp"]
    assert status == 200
    assert "x_whoami" in tools
    # A cookie alone does not open /mcp; a wrong or missing bearer gets the fixed 401 envelope.
    assert obs["cookie_mcp"] == 401
    for key in ("no_bearer_mcp", "wrong_bearer_mcp"):
        assert obs[key] == [
            401,
            {
                "ok": False,
                "error": {
                    "code": 77,
                    "message": "sign-in required: send a session cookie or a bearer token",
                },
            },
        ]
    assert obs["bearer_rpc_by_name"] == 200
    assert obs["login_post"] == 200
    assert obs["cookie_name"] == "local_session"
    status, envelope = obs["cookie_rpc"]
    assert status == 200
    assert envelope["ok"] is True
    if context:
        assert envelope["data"] == {
            "surface": "http",
            "auth": {"type": "AuthRecord", "credential": "session", "peer_local": True},
        }
    assert obs["cookie_is_secret"] is False
    assert obs["leaked"] is False

    assert obs["pid_file"] is True
    assert obs["pid_file_after_close"] is False
    assert obs["loopback_refused_after_close"] is True
    assert obs["remote_refused_after_close"] is True


class TestStartDaemonWithRemote:
    def test_both_listeners_share_one_port_and_answer_by_their_rules(
        self, daemon_obs: dict[str, Any]
    ) -> None:
        _assert_both_listeners(daemon_obs, context=True)
        assert daemon_obs["meta_remote"] is True

    def test_create_context_sees_loopback_none_then_the_gate_records(
        self, daemon_obs: dict[str, Any]
    ) -> None:
        # Refused requests never reach create_context; MCP over loopback has no record.
        surfaces_auth = [(call["surface"], call["auth"]) for call in daemon_obs["calls"]]
        bearer = {"type": "AuthRecord", "credential": "bearer", "peer_local": True}
        assert surfaces_auth == [
            ("http", None),
            ("http", bearer),
            ("http", bearer),
            ("http", {"type": "AuthRecord", "credential": "session", "peer_local": True}),
            # The remote MCP client's tool calls, one per protocol era, then one as a task.
            ("mcp", bearer),
            ("mcp", bearer),
            ("mcp", bearer),
        ]

    def test_remote_mcp_client_lists_and_calls_tools_with_the_bearer(
        self, daemon_obs: dict[str, Any]
    ) -> None:
        bearer = {"type": "AuthRecord", "credential": "bearer", "peer_local": True}
        for mode in ("legacy", "auto", "tasks"):
            seen = daemon_obs["sdk_client"][mode]
            assert "x_whoami" in seen["tools"]
            assert seen["is_error"] is False
            assert seen["structured"] == {"ok": True, "data": {"surface": "mcp", "auth": bearer}}
            # Only the client declaring the tasks extension got its result through a task,
            # built with the gate's record of the request that started it.
            assert seen["task"] is (mode == "tasks")

    def test_a_remote_task_is_kept_without_the_bearer(self, daemon_obs: dict[str, Any]) -> None:
        assert daemon_obs["task_files"] == 1
        assert daemon_obs["task_files_leaked"] is False

    def test_remote_port_taken_leaves_loopback_unbound_and_no_pid_file(
        self, daemon_obs: dict[str, Any]
    ) -> None:
        assert "already in use" in daemon_obs["taken_error"]
        assert daemon_obs["taken_loopback_refused"] is True
        assert daemon_obs["taken_pid_file"] is False

    def test_no_secret_in_logs(self, daemon_obs: dict[str, Any]) -> None:
        assert daemon_obs["log_lines"] > 0
        assert daemon_obs["log_leaked"] is False


class TestServeCommandWithRemote:
    def test_serve_flags_build_the_remote_listener(self, cli_obs: dict[str, Any]) -> None:
        assert cli_obs["started"] is True
        _assert_both_listeners(cli_obs, context=False)
        assert cli_obs["exit_code"] == 0

    def test_a_revoked_device_gets_401_while_another_keeps_working(
        self, cli_obs: dict[str, Any]
    ) -> None:
        devices = cli_obs["devices"]
        # The two new devices, and the session _observe signed in (http.client sends no agent).
        assert devices["listed"] == ["", "Laptop/2", "Phone/1"]
        assert devices["peer"] == ADDR
        assert devices["revoke"] == [0, True]
        assert devices["phone_after"] == 401
        assert devices["laptop_after"] == 200

    def test_no_secret_in_captured_output(self, cli_obs: dict[str, Any]) -> None:
        assert cli_obs["captured_ready"] is True
        assert cli_obs["captured_leaked"] is False


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
