"""The one HTTP sender of the I/O layer: one request, sent once, under one deadline.

Both outside parties go through `send_once`: the usage endpoint (`_poll`) and the token endpoint
(`_token_request`). It

- sends once and never retries;
- never follows a redirect: the answer's status is handed back, and to a caller whose client
  would follow redirects a redirect is a `network` failure (the bearer or refresh token would go
  along; the spec's redirect mode is error);
- asks for `accept-encoding: identity` and reads a wanted body raw, under a byte cap; a body
  compressed anyway is undone within the same cap (no compression bomb grows past it);
- bounds connect, headers and the whole body read by one asyncio deadline;
- closes an unwanted body unread (an error answer may echo the token).

Every transport error becomes `SendFailed("network")`, raised outside the handler, so no message
or `__context__` that could quote the request survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import ssl
import sys
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ._gate import zero

if TYPE_CHECKING:
    import httpx

__all__ = [
    "HttpAnswer",
    "SendFailed",
    "cache_missing_sniffio",
    "client_for",
    "send_once",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpAnswer:
    """What came back: the status, the body when it was wanted, and a 429's `Retry-After`."""

    status: int
    body: bytearray | None
    retry_after: str | None


class SendFailed(Exception):
    """No usable answer: `network` (transport, deadline, redirect) or `too-large` (over the cap)."""

    def __init__(self, kind: Literal["network", "too-large"]) -> None:
        super().__init__(kind)
        self.kind: Literal["network", "too-large"] = kind


def cache_missing_sniffio() -> None:
    """Make httpcore's per-request `import sniffio` a dict lookup when sniffio is not installed.

    httpcore imports sniffio on every request to learn the async library; without it each failed
    import rescans sys.path (about a millisecond). Recording the miss in sys.modules is what a
    failed import means anyway, so nothing that could import sniffio is turned away.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Build httpx's default verifying TLS context once per process (loading CAs costs ~80 ms)."""
    import httpx

    return httpx.create_ssl_context()


@contextlib.asynccontextmanager
async def client_for(client: httpx.AsyncClient | None) -> AsyncIterator[httpx.AsyncClient]:
    """Yield the caller's client, or one of our own (redirects off, no per-phase timeout)."""
    cache_missing_sniffio()
    if client is not None:
        yield client
        return
    import httpx  # only a request pays for httpx

    # No per-phase timeout: `send_once`'s one asyncio deadline bounds connect, headers and body.
    async with httpx.AsyncClient(
        follow_redirects=False,
        timeout=None,  # noqa: S113
        verify=_ssl_context(),
    ) as own:
        yield own


def _decode(raw: bytearray, encoding: str, max_bytes: int) -> bytearray:
    """Undo a content-encoding without ever holding more than `max_bytes` of decoded bytes."""
    if encoding in ("", "identity"):
        return raw
    attempts: tuple[int, ...]
    if encoding in ("gzip", "x-gzip"):
        attempts = (16 + zlib.MAX_WBITS,)
    elif encoding == "deflate":
        attempts = (zlib.MAX_WBITS, -zlib.MAX_WBITS)  # zlib-wrapped, else raw (as httpx does)
    else:
        raise SendFailed("too-large")  # br, zstd or a chain: not asked for, not undone
    for wbits in attempts:
        decoder = zlib.decompressobj(wbits)
        try:
            out = decoder.decompress(raw, max_bytes + 1)
        except zlib.error:
            continue
        if len(out) > max_bytes or decoder.unconsumed_tail:
            raise SendFailed("too-large")  # past the cap once decoded: a compression bomb too
        return bytearray(out)
    raise SendFailed("too-large")


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytearray:
    if response.is_stream_consumed:
        # A transport that answered with a response it had already read (httpx.MockTransport
        # with `httpx.Response(200, json=...)`): its stream is spent, its decoded content is all
        # there is, and the body is already in memory, so only the cap is left to apply.
        content = response.content
        if len(content) > max_bytes:
            raise SendFailed("too-large")
        return bytearray(content)
    # Raw bytes, capped as they arrive: httpx's decoders would inflate a whole chunk at once.
    raw = bytearray()
    try:
        async for chunk in response.aiter_raw():
            raw += chunk
            if len(raw) > max_bytes:
                raise SendFailed("too-large")
        encoding = response.headers.get("content-encoding", "").strip().lower()
        body = _decode(raw, encoding, max_bytes)
    except BaseException:
        zero(raw)  # a token answer cut off is still a token answer
        raise
    if body is not raw:
        zero(raw)
    return body


async def _send(
    client: httpx.AsyncClient,
    request: httpx.Request,
    *,
    timeout_s: float,
    max_bytes: int,
    body_wanted: Callable[[int], bool],
) -> HttpAnswer:
    async with asyncio.timeout(timeout_s):
        response = await client.send(request, stream=True, follow_redirects=False)
        try:
            if response.is_redirect and client.follow_redirects:
                raise SendFailed("network")  # the caller's client would have followed it
            status = response.status_code
            retry_after = response.headers.get("retry-after") if status == 429 else None
            body = await _read_capped(response, max_bytes) if body_wanted(status) else None
        finally:
            await response.aclose()
    return HttpAnswer(status=status, body=body, retry_after=retry_after)


async def send_once(
    client: httpx.AsyncClient,
    method: Literal["GET", "POST"],
    url: str,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    max_bytes: int,
    body_wanted: Callable[[int], bool],
    json_body: Mapping[str, str] | None = None,
) -> HttpAnswer:
    """Send one request and return its answer; raise `SendFailed` (never retried).

    The body is read (at most `max_bytes`, decoded) only when `body_wanted(status)`; the caller
    zeroes a body that held a secret.
    """
    failure: Literal["network", "too-large"] | None = None
    try:
        request = client.build_request(
            method,
            url,
            headers={**headers, "accept-encoding": "identity"},
            json=json_body,
            timeout=None,  # the one deadline is `timeout_s`, below
        )
        answer = await _send(
            client, request, timeout_s=timeout_s, max_bytes=max_bytes, body_wanted=body_wanted
        )
    except SendFailed as exc:
        failure = exc.kind
    except Exception:  # timeouts, resets, TLS errors: the message (it may quote the request) goes
        failure = "network"
    if failure is not None:
        raise SendFailed(failure)  # outside the handler: no __context__ links the original
    return answer
