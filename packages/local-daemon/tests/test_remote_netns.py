"""A real remote listener on a non-loopback address, inside network namespaces this test makes.

`unshare -n` gives a namespace where 192.0.2.10 sits on lo: the client is this machine, so
`peer_local` is true. Two namespaces joined by a veth pair make the client another host, so
`peer_local` is false. Nothing binds or sends outside a namespace made here.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gate_support
from netns_support import last_json, observe_script

pytestmark = pytest.mark.slow

SUPPORT = Path(gate_support.__file__).resolve()


def _run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def local_ns_observations(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("netns-local")
    return observe_script(SUPPORT, workdir, "local")


class TestLocalPeer:
    def test_plain_http_fails_the_handshake_with_no_http_reply(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        assert local_ns_observations["plain_http_reply"] != "HTTP/"

    def test_foreign_host_gets_403_before_the_gate(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        obs = local_ns_observations
        assert obs["foreign_host"] == 403
        assert obs["foreign_host_login"] == 403
        assert obs["localhost_host"] == 403
        assert obs["wrong_port_host"] == 403
        assert obs["box_host"] == 200

    def test_no_credential_is_401_and_mcp_takes_the_bearer_only(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        assert local_ns_observations["no_credential"] == 401
        assert local_ns_observations["no_credential_mcp"] == 401
        assert local_ns_observations["bearer_mcp"] == 200
        assert local_ns_observations["cookie_mcp"] == 401

    def test_bearer_is_a_local_peer(self, local_ns_observations: dict[str, Any]) -> None:
        status, record = local_ns_observations["bearer"]
        assert status == 200
        assert record["credential"] == "bearer"
        assert record["peer_local"] is True

    def test_login_code_then_cookie(self, local_ns_observations: dict[str, Any]) -> None:
        obs = local_ns_observations
        assert obs["login_page"] == 200
        assert obs["http_origin_login"] == 403
        assert obs["login_post"] == 200
        assert (
            obs["cookie_attributes"] == "HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=2592000"
        )
        assert obs["login_again"] == 401
        status, record = obs["cookie"]
        assert status == 200
        assert record["credential"] == "session"
        assert record["peer_local"] is True

    def test_rotation_voids_sessions_and_the_old_bearer(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        obs = local_ns_observations
        assert obs["cookie_after_rotation"] == 401
        assert obs["old_bearer_after_rotation"] == 401
        assert obs["new_bearer_after_rotation"] == 200

    def test_bad_token_file_is_503_until_fixed(self, local_ns_observations: dict[str, Any]) -> None:
        assert local_ns_observations["bad_token_file"] == 503
        assert local_ns_observations["fixed_token_file"] == 401

    def test_hot_reload_new_handshake_sees_new_pair_while_old_connection_lives(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        obs = local_ns_observations
        assert obs["old_first"] == 200
        assert obs["new_handshake_new_cert"] is True
        assert obs["old_after_reload"] == 200
        assert obs["old_still_old_cert"] is True

    def test_bad_change_is_logged_and_last_good_pair_keeps_serving(
        self, local_ns_observations: dict[str, Any]
    ) -> None:
        obs = local_ns_observations
        assert obs["bad_change_logged"] is True
        assert obs["after_bad_change"] == 200
        assert obs["after_bad_change_serial_kept"] is True

    def test_no_secret_in_answers_or_logs(self, local_ns_observations: dict[str, Any]) -> None:
        assert local_ns_observations["leaked"] is False
        assert local_ns_observations["log_leaked"] is False


@pytest.fixture
def veth_namespaces() -> Iterator[tuple[str, str]]:
    tag = secrets.token_hex(3)
    server_ns, client_ns = f"ld-srv-{tag}", f"ld-cli-{tag}"
    made: list[str] = []
    try:
        for ns in (server_ns, client_ns):
            _run("ip", "netns", "add", ns)
            made.append(ns)
        # Created inside the server namespace, so no interface ever appears in the host's.
        _run(
            "ip",
            "-n",
            server_ns,
            "link",
            "add",
            "v0",
            "type",
            "veth",
            "peer",
            "name",
            "v1",
            "netns",
            client_ns,
        )
        for ns, dev, addr in (
            (server_ns, "v0", gate_support.NS_SERVER_ADDR),
            (client_ns, "v1", gate_support.NS_CLIENT_ADDR),
        ):
            _run("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _run("ip", "-n", ns, "link", "set", dev, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        yield server_ns, client_ns
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30, check=False)


def test_peer_on_another_host_is_not_local(
    veth_namespaces: tuple[str, str], tmp_path: Path
) -> None:
    server_ns, client_ns = veth_namespaces
    server = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, sys.executable, str(SUPPORT), "serve", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        assert server.stdin is not None
        first = server.stdout.readline()
        assert first.startswith("{"), server.stderr.read() if server.stderr else ""
        port = json.loads(first)["port"]
        client = subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                client_ns,
                sys.executable,
                str(SUPPORT),
                "client",
                str(tmp_path),
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert client.returncode == 0, client.stderr[-3000:]
        server.stdin.close()
        out = server.stdout.read()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
        for stream in (server.stdin, server.stdout, server.stderr):
            if stream is not None:
                stream.close()
    obs = last_json(client.stdout)
    status, record = obs["bearer"]
    assert status == 200
    assert record == {"credential": "bearer", "issued_at": record["issued_at"], "peer_local": False}
    status, record = obs["cookie"]
    assert status == 200
    assert record["credential"] == "session"
    assert record["peer_local"] is False
    assert obs["plain_http_reply"] != "HTTP/"
    assert obs["foreign_host"] == 403
    assert obs["no_credential"] == 401
    assert obs["login_again"] == 401
    assert obs["leaked"] is False
    assert last_json(out)["log_leaked"] is False
