"""The one token request: POST `{auth_url}/v1/oauth/token` through the one sender (`_http`).

Returns the 200 answer's bytes (at most 64 KiB) in a buffer the caller zeroes after parsing;
any other outcome raises `RefreshStop` with `http` (status in its own field), `network` (a
redirect the caller's client would follow included) or `malformed` (over the cap). An error body
is closed unread (it may echo the token) and a transport error's message (which may quote the
request) is dropped: `_http.send_once` does both for every request of this package.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Literal

from agent_accounts._oauth import TOKEN_ANSWER_MAX_BYTES

from ._http import SendFailed, cache_missing_sniffio, client_for, send_once
from ._refresh_results import RefreshStop

if TYPE_CHECKING:
    import httpx

__all__ = ["send_token_request", "warm_up"]


def warm_up() -> None:
    """Load, before the locks are taken, what the request and the install would load lazily.

    httpx loads its anyio backend on the first connection and the install loads libc's
    `renameat2` on first use: done here, the locked section (and the window between the answer
    and the synced temp file) holds only the refresh's own system calls.
    """
    import importlib

    from ._atomic import RenameUnsupported, _libc_renameat2

    for module in ("httpcore._backends.anyio", "anyio._backends._asyncio"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    # httpcore imports sniffio on every request; a miss rescanned sys.path inside the window.
    cache_missing_sniffio()
    with contextlib.suppress(RenameUnsupported):
        _libc_renameat2()


async def send_token_request(
    client: httpx.AsyncClient | None, url: str, body: dict[str, str], timeout_s: float
) -> bytearray:
    """Send the token request once; return the 200 body or raise `RefreshStop`."""
    status: int | None = None
    kind: Literal["network", "too-large"] | None
    try:
        async with client_for(client) as http:
            answer = await send_once(
                http,
                "POST",
                url,
                headers={"content-type": "application/json", "accept": "application/json"},
                json_body=body,
                timeout_s=timeout_s,
                max_bytes=TOKEN_ANSWER_MAX_BYTES,
                body_wanted=lambda status: status == 200,
            )
    except SendFailed as failed:
        kind = failed.kind
    else:
        if answer.body is not None:
            return answer.body
        kind, status = None, answer.status
    # Raised outside any handler, so no __context__ links an error that quotes the request.
    if kind == "too-large":
        raise RefreshStop(failure="malformed")
    if kind == "network":
        raise RefreshStop(failure="network")
    raise RefreshStop(failure="http", http_status=status)
