"""End to end over TLS: the `mcp` SDK's OAuth client and the TypeScript SDK's sign in to the real
daemon's remote listener.

The daemon (`start_daemon(remote=..., tool_prefix=...)`) and both clients run inside a private
network namespace (`unshare -n`, 192.0.2.10 on its lo), so nothing binds or sends outside it; the
TypeScript client (`node/mcp_oauth_client.mjs`) trusts the test CA through `NODE_EXTRA_CA_CERTS`.
Run as a script (`python test_oauth_remote.py WORKDIR`) this file plays the namespace side and
prints its observations as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

import gate_support
from local_daemon import (
    Registry,
    list_sessions,
    mint_login_code,
    revoke_session,
    start_daemon,
)
from netns_support import observe_script
from oauth_support import DaemonBrowser, MemoryStorage, sdk_handlers

pytestmark = pytest.mark.slow

THIS = Path(__file__).resolve()
TS_CLIENT = THIS.parent / "node" / "mcp_oauth_client.mjs"
ADDR = gate_support.NS_SERVER_ADDR
_TIMEOUT = 20.0


def _registry() -> Registry:
    registry = Registry()

    @registry.command
    def echo(text: str) -> dict[str, str]:
        """Echo the text."""
        return {"text": text}

    return registry


async def _scenario(workdir: Path) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    setup = gate_support.remote_setup(workdir, "daemon.test")
    token_file, remote = setup.token_file, setup.remote
    state_dir = workdir / "state"
    ctx = gate_support.client_context(setup.ca_pem)
    out: dict[str, Any] = {}
    with gate_support.capture_logs() as records:
        handle = await start_daemon(
            registry=_registry(), version="1", state_dir=state_dir, tool_prefix="x", remote=remote
        )
        try:
            origin = f"https://{ADDR}:{handle.port}"
            async with httpx2.AsyncClient(verify=ctx, timeout=_TIMEOUT) as http:
                prm = await http.get(origin + "/.well-known/oauth-protected-resource/mcp")
                out["resource"] = prm.json()["resource"]
                browser = DaemonBrowser(
                    origin=origin, http=http, login_code=lambda: mint_login_code(token_file)
                )
                redirect_handler, callback_handler = sdk_handlers(browser)
                storage = MemoryStorage()
                oauth = OAuthClientProvider(
                    server_url=origin + "/mcp",
                    client_metadata=OAuthClientMetadata(
                        client_name="namespace client",
                        redirect_uris=["http://127.0.0.1:9/callback"],  # type: ignore[list-item]
                    ),
                    storage=storage,
                    redirect_handler=redirect_handler,
                    callback_handler=callback_handler,
                )
                sdk_http = httpx2.AsyncClient(auth=oauth, verify=ctx, timeout=_TIMEOUT)
                transport = streamable_http_client(origin + "/mcp", http_client=sdk_http)
                async with sdk_http, Client(transport) as client:
                    listed = await client.list_tools()
                    called = await client.call_tool("x_echo", {"text": "over tls"})
                out["tools"] = sorted(tool.name for tool in listed.tools)
                out["structured"] = called.structured_content
                sessions = list_sessions(state_dir / "sessions.json")
                out["client_names"] = [s.client_name for s in sessions if s.client_id]
                ca_file = workdir / "ca.pem"
                ca_file.write_bytes(setup.ca_pem)
                out["ts"] = await _typescript_client(
                    origin + "/mcp", mint_login_code(token_file), ca_file
                )
                out["ts_sessions"] = [
                    s.client_name
                    for s in list_sessions(state_dir / "sessions.json")
                    if s.client_id and s.client_name != "namespace client"
                ]
                assert storage.tokens is not None
                access = storage.tokens.access_token
                out["tokens"] = [access, storage.tokens.refresh_token or ""]

                async def mcp_status() -> int:
                    answer = await http.post(
                        origin + "/mcp",
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                        headers={
                            "Authorization": f"Bearer {access}",
                            "Accept": "application/json, text/event-stream",
                        },
                    )
                    return answer.status_code

                out["before_revoke"] = await mcp_status()
                device = next(s for s in sessions if s.client_id)
                revoke_session(state_dir / "sessions.json", device.id)
                out["after_revoke"] = await mcp_status()
        finally:
            await handle.close()
    secrets_seen = [gate_support.secret_of(token_file), *out.pop("tokens")]
    out["log_leaked"] = records.holds(*secrets_seen)
    out["origin"] = origin
    return out


async def _typescript_client(mcp_url: str, login_code: str, ca_file: Path) -> dict[str, Any]:
    """Run the TypeScript SDK's OAuth client against `mcp_url`; return what it printed."""
    import os

    proc = await asyncio.create_subprocess_exec(
        "node",
        str(TS_CLIENT),
        mcp_url,
        login_code,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "NODE_EXTRA_CA_CERTS": str(ca_file)},
    )
    async with asyncio.timeout(120):
        out, err = await proc.communicate()
    if proc.returncode != 0:
        return {"failed": err.decode(errors="replace")[-3000:]}
    result: dict[str, Any] = json.loads(out)
    return result


def main(argv: list[str]) -> int:
    """Run the namespace side and print its observations as JSON."""
    print(json.dumps(asyncio.run(_scenario(Path(argv[0])))), flush=True)
    return 0


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return observe_script(THIS, tmp_path_factory.mktemp("oauth-remote"))


def test_sdk_client_signs_in_over_tls_and_calls_a_tool(observed: dict[str, Any]) -> None:
    assert observed["resource"] == observed["origin"] + "/mcp"
    assert observed["resource"].startswith("https://")
    assert observed["tools"] == ["x_echo"]
    assert observed["structured"] == {"ok": True, "data": {"text": "over tls"}}
    assert observed["client_names"] == ["namespace client"]


def test_typescript_sdk_client_signs_in_over_tls_and_calls_a_tool(
    observed: dict[str, Any],
) -> None:
    # Discovery, dynamic registration, PKCE, the browser step on the daemon's own pages with a
    # login code, the code exchange, then tools/list and tools/call: all over TLS.
    result = observed["ts"]
    assert "failed" not in result, result.get("failed")
    assert result["first"] == "unauthorized"
    assert result["authUrl"].startswith(observed["origin"] + "/authorize?")
    assert "code_challenge_method=S256" in result["authUrl"]
    assert "resource=" in result["authUrl"]
    assert result["step"]["signedIn"] == 200
    assert result["step"]["named"] is True
    assert result["clientId"].startswith("dcr1.")
    assert result["hasRefresh"] is True
    assert result["tools"] == ["x_echo"]
    assert result["called"] == {"ok": True, "data": {"text": "from ts"}}
    assert observed["ts_sessions"] == ["ts sdk client"]


def test_a_revoked_session_is_refused_at_once(observed: dict[str, Any]) -> None:
    assert observed["before_revoke"] == 200
    assert observed["after_revoke"] == 401


def test_no_secret_or_token_in_logs(observed: dict[str, Any]) -> None:
    assert observed["log_leaked"] is False


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
