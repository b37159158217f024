"""The one token request: POST `{auth_url}/v1/oauth/token`, never retried, redirects refused.

Returns the 200 answer's raw bytes (at most 64 KiB) in a buffer the caller zeroes after parsing;
any other outcome raises `RefreshStop` with `http` (status in its own field) or `network`. An
error body is closed unread (it may echo the token) and a transport error's message (which may
quote the request) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from agent_accounts._oauth import TOKEN_ANSWER_MAX_BYTES

from ._gate import zero
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
    from ._poll import _cache_missing_sniffio

    for module in ("httpcore._backends.anyio", "anyio._backends._asyncio"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    # httpcore imports sniffio on every request; a miss rescanned sys.path inside the window.
    _cache_missing_sniffio()
    with contextlib.suppress(RenameUnsupported):
        _libc_renameat2()


async def send_token_request(
    client: httpx.AsyncClient | None, url: str, body: dict[str, str], timeout_s: float
) -> bytearray:
    """Send the token request once; return the 200 body or raise `RefreshStop`."""
    import httpx

    owned = client is None
    http = httpx.AsyncClient(follow_redirects=False, timeout=timeout_s) if owned else client
    assert http is not None
    buffer = bytearray()
    status: int | None = None
    failure: RefreshStop | None = None
    try:
        async with asyncio.timeout(timeout_s):
            request = http.build_request(
                "POST",
                url,
                json=body,
                headers={"content-type": "application/json", "accept": "application/json"},
                timeout=timeout_s,
            )
            response = await http.send(request, stream=True, follow_redirects=False)
            try:
                status = response.status_code
                if status == 200:
                    async for chunk in response.aiter_bytes():
                        buffer += chunk
                        if len(buffer) > TOKEN_ANSWER_MAX_BYTES:
                            failure = RefreshStop(failure="malformed")
                            break
            finally:
                await response.aclose()
    except Exception:
        status = None
        failure = RefreshStop(failure="network")
    finally:
        if owned:
            with contextlib.suppress(Exception):
                await http.aclose()
    # Raised outside any handler, so no __context__ links an error that quotes the request.
    if failure is None and status != 200:
        failure = RefreshStop(failure="http", http_status=status)
    if failure is not None:
        zero(buffer)
        raise failure
    return buffer
