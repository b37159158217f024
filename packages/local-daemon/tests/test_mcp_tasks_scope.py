"""MCP tasks belong to the authorization context that started them (MCP 2025-11-25, tasks: bound to
the requester's authorization context), end to end over TLS against the real daemon.

Two remote devices signed in through the `mcp` SDK's own OAuth client (two sessions), the remote
bearer secret and a loopback client, all with the SDK's client: none gets, reads the result of,
cancels or lists another's task (each answered exactly as an unknown id), and once a device's
session is revoked its tasks are reachable by no one. Run inside a private network namespace
(`unshare -n`, 192.0.2.10 on its lo); as a script (`python test_mcp_tasks_scope.py WORKDIR`) this
file plays the namespace side and prints its observations as one JSON line.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

import gate_support
from local_daemon import (
    list_sessions,
    mint_login_code,
    revoke_session,
    start_daemon,
)
from mcp_task_client import (
    TasksExtension,
    cancel_task,
    get_task,
    list_tasks,
    start_task,
    task_client,
    task_result,
)
from netns_support import observe_script
from oauth_support import DaemonBrowser, MemoryStorage, sdk_handlers
from task_registry import TOOL_PREFIX, task_registry

pytestmark = pytest.mark.slow

THIS = Path(__file__).resolve()
ADDR = gate_support.NS_SERVER_ADDR
_TIMEOUT = 60.0
_UNKNOWN = "U" * 24  # a task id no one started


async def _refusals(client: Any, task_id: str) -> dict[str, Any]:
    """What `tasks/get`, `tasks/result` and `tasks/cancel` answer for `task_id`: each error's
    code, message and whether its data is the id asked (else what succeeded)."""
    calls: dict[str, Callable[[Any, str], Awaitable[Any]]] = {
        "get": get_task,
        "result": task_result,
        "cancel": cancel_task,
    }
    seen: dict[str, Any] = {}
    for name, call in calls.items():
        try:
            answer = await call(client, task_id)
        except Exception as exc:  # the SDK's MCPError
            error = getattr(exc, "error", None)
            seen[name] = [
                getattr(error, "code", None),
                getattr(error, "message", repr(exc)),
                getattr(error, "data", None) == task_id,
            ]
        else:
            seen[name] = ["answered", type(answer).__name__]
    return seen


async def _listed(client: Any) -> list[str]:
    return sorted(task.task_id for task in (await list_tasks(client)).tasks)


@asynccontextmanager
async def _device(
    origin: str, ctx: ssl.SSLContext, token_file: Path, name: str
) -> AsyncIterator[Any]:
    """A remote device: the SDK's OAuth client signed in as a session of its own."""
    from mcp.client import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(verify=ctx, timeout=_TIMEOUT))
        browser = DaemonBrowser(
            origin=origin, http=http, login_code=lambda: mint_login_code(token_file)
        )
        redirect_handler, callback_handler = sdk_handlers(browser)
        oauth = OAuthClientProvider(
            server_url=origin + "/mcp",
            client_metadata=OAuthClientMetadata(
                client_name=name,
                redirect_uris=["http://127.0.0.1:9/callback"],  # type: ignore[list-item]
            ),
            storage=MemoryStorage(),
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
        )
        sdk_http = await stack.enter_async_context(
            httpx2.AsyncClient(auth=oauth, verify=ctx, timeout=_TIMEOUT)
        )
        transport = streamable_http_client(origin + "/mcp", http_client=sdk_http)
        yield await stack.enter_async_context(Client(transport, extensions=[TasksExtension()]))


@asynccontextmanager
async def _bearer(origin: str, ctx: ssl.SSLContext, token_file: Path) -> AsyncIterator[Any]:
    """The SDK's client with the remote bearer secret."""
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {gate_support.secret_of(token_file)}"}
    async with httpx2.AsyncClient(headers=headers, verify=ctx, timeout=_TIMEOUT) as http:
        transport = streamable_http_client(origin + "/mcp", http_client=http)
        async with Client(transport, extensions=[TasksExtension()]) as client:
            yield client


async def _scenario(workdir: Path) -> dict[str, Any]:
    setup = gate_support.remote_setup(workdir, "daemon.test")
    token_file, remote = setup.token_file, setup.remote
    state_dir = workdir / "state"
    ctx = gate_support.client_context(setup.ca_pem)
    gate = workdir / "gate"
    out: dict[str, Any] = {}
    handle = await start_daemon(
        registry=task_registry(),
        version="1",
        state_dir=state_dir,
        tool_prefix=TOOL_PREFIX,
        remote=remote,
    )
    try:
        origin = f"https://{ADDR}:{handle.port}"
        loopback_url = f"http://127.0.0.1:{handle.port}/mcp"
        async with (
            _device(origin, ctx, token_file, "device a") as a,
            _device(origin, ctx, token_file, "device b") as b,
            _bearer(origin, ctx, token_file) as bearer,
            task_client(loopback_url) as loopback,
        ):
            working = await start_task(a, "tk_gated", {"gate": str(gate)})
            done = await start_task(a, "tk_echo", {"text": "a's"})
            mine = await task_result(a, done.task_id)
            out["a_result"] = mine.structured_content
            local = await start_task(loopback, "tk_echo", {"text": "loopback's"})
            await task_result(loopback, local.task_id)
            out["ids"] = {"working": working.task_id, "done": done.task_id}
            out["unknown"] = await _refusals(b, _UNKNOWN)
            out["b_on_a"] = {
                "working": await _refusals(b, working.task_id),
                "done": await _refusals(b, done.task_id),
            }
            out["bearer_on_a"] = await _refusals(bearer, working.task_id)
            out["loopback_on_a"] = await _refusals(loopback, working.task_id)
            out["a_on_loopback"] = await _refusals(a, local.task_id)
            out["lists"] = {
                "a": await _listed(a),
                "b": await _listed(b),
                "bearer": await _listed(bearer),
                "loopback": await _listed(loopback),
            }
            out["local_id"] = local.task_id
            # A's working task is still working after B's and the others' cancels.
            out["a_working_status"] = (await get_task(a, working.task_id)).status
            sessions = list_sessions(state_dir / "sessions.json")
            device_a = next(s for s in sessions if s.client_name == "device a")
            record = json.loads((state_dir / "tasks" / f"{done.task_id}.json").read_bytes())
            out["owner_in_file"] = record["owner"]
            out["owner_expected"] = "session:" + hashlib.sha256(device_a.id.encode()).hexdigest()
            out["session_id_in_file"] = any(
                device_a.id.encode() in path.read_bytes()
                for path in (state_dir / "tasks").glob("*.json")
            )
            revoke_session(state_dir / "sessions.json", device_a.id)
            out["after_revoke"] = {
                "b": await _refusals(b, done.task_id),
                "bearer": await _refusals(bearer, done.task_id),
                "loopback": await _refusals(loopback, done.task_id),
                "lists": [await _listed(b), await _listed(bearer), await _listed(loopback)],
            }
            try:
                await get_task(a, done.task_id)
            except Exception as exc:
                out["a_after_revoke"] = type(exc).__name__
            else:
                out["a_after_revoke"] = "answered"
    finally:
        await handle.close()
    return out


def main(argv: list[str]) -> int:
    """Run the namespace side and print its observations as JSON."""
    print(json.dumps(asyncio.run(_scenario(Path(argv[0])))), flush=True)
    return 0


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return observe_script(THIS, tmp_path_factory.mktemp("tasks-scope"), timeout=300.0)


def _as_unknown(seen: dict[str, Any], unknown: dict[str, Any]) -> None:
    """Each of get, result and cancel answered as for an id no one started."""
    assert set(seen) == {"get", "result", "cancel"}
    for name, answer in seen.items():
        assert answer == unknown[name], name
        assert answer[0] != "answered", name


def test_an_unknown_id_is_invalid_params_naming_the_id(observed: dict[str, Any]) -> None:
    for answer in observed["unknown"].values():
        assert answer == [-32602, "Unknown task", True]


def test_another_device_cannot_get_read_or_cancel_a_task(observed: dict[str, Any]) -> None:
    assert observed["a_result"] == {"ok": True, "data": {"text": "a's"}}
    _as_unknown(observed["b_on_a"]["working"], observed["unknown"])
    _as_unknown(observed["b_on_a"]["done"], observed["unknown"])
    assert observed["a_working_status"] == "working"


def test_bearer_and_loopback_cannot_reach_a_devices_task_nor_it_theirs(
    observed: dict[str, Any],
) -> None:
    _as_unknown(observed["bearer_on_a"], observed["unknown"])
    _as_unknown(observed["loopback_on_a"], observed["unknown"])
    _as_unknown(observed["a_on_loopback"], observed["unknown"])


def test_each_context_lists_its_own_tasks_only(observed: dict[str, Any]) -> None:
    ids = observed["ids"]
    assert observed["lists"] == {
        "a": sorted([ids["working"], ids["done"]]),
        "b": [],
        "bearer": [],
        "loopback": [observed["local_id"]],
    }


def test_the_task_file_names_its_owner_by_a_hash_of_the_session(
    observed: dict[str, Any],
) -> None:
    assert observed["owner_in_file"] == observed["owner_expected"]
    assert observed["session_id_in_file"] is False


def test_a_revoked_sessions_tasks_are_reachable_by_no_one(observed: dict[str, Any]) -> None:
    after = observed["after_revoke"]
    for who in ("b", "bearer", "loopback"):
        _as_unknown(after[who], observed["unknown"])
    assert after["lists"] == [[], [], [observed["local_id"]]]
    assert observed["a_after_revoke"] != "answered"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
