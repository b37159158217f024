"""Ranged file responses: one file, opened without following a final symlink, streamed in chunks.

The body never passes through memory whole: bytes are read with `os.pread` in a worker thread, one
chunk at a time, and written as they come. Texts are fixed so no answer names the path.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from typing import Literal, TypeAlias

from aiohttp import hdrs, web

__all__ = ["file_response"]

_log = logging.getLogger("local_daemon")

CHUNK_SIZE = 256 * 1024

_NOT_FOUND = "Not Found"
_FORBIDDEN = "Forbidden"
_NOT_SATISFIABLE = "Range Not Satisfiable"

# O_NONBLOCK keeps open() of a FIFO from waiting for a writer; the fstat check then refuses it.
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

RangeVerdict: TypeAlias = Literal["whole", "unsatisfiable"]

_SUFFIX_ZERO = re.compile(r"^\s*bytes\s*=\s*-0+\s*$", re.ASCII | re.IGNORECASE)


class OpenRefused(Exception):
    """The file cannot be served; `status` is 403 or 404."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenFile:
    """An open regular file: its descriptor and its size at open time."""

    fd: int
    size: int
    mtime_ns: int


# A symlink where none may be (ELOOP from O_NOFOLLOW or RESOLVE_NO_SYMLINKS), one leading out of
# a root (EXDEV from RESOLVE_BENEATH), a refused permission or a socket (ENXIO) is a 403; any
# other failure (ENOENT, or ENOTDIR for a file used as a directory) is a 404.
_FORBIDDEN_ERRNO = frozenset({errno.ELOOP, errno.EXDEV, errno.EACCES, errno.EPERM, errno.ENXIO})


def refused_open(exc: OSError) -> OpenRefused:
    """Return the refusal a failed open of a file to serve gets: 403 or 404."""
    return OpenRefused(403 if exc.errno in _FORBIDDEN_ERRNO else 404)


def regular_file(fd: int, *, not_regular: int) -> OpenFile:
    """Return `fd` as an `OpenFile` when it is a regular file; else close it and raise
    `OpenRefused(not_regular)` (403 for `file_response`, as its spec says; 404 for a static
    name that is a directory, which is simply not a file there)."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OpenRefused(not_regular)
    except BaseException:
        os.close(fd)
        raise
    return OpenFile(fd=fd, size=st.st_size, mtime_ns=st.st_mtime_ns)


def open_regular_file(path: str | os.PathLike[str]) -> OpenFile:
    """Open `path` read-only without following a final symlink and insist on a regular file."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise refused_open(exc) from None
    return regular_file(fd, not_regular=403)


def plain_response(
    status: int, text: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    """Build a small fixed-text answer carrying `nosniff` and no caching."""
    response = web.Response(status=status, text=text, content_type="text/plain")
    response.headers[hdrs.X_CONTENT_TYPE_OPTIONS] = "nosniff"
    response.headers[hdrs.CACHE_CONTROL] = "no-store"
    if headers:
        response.headers.update(headers)
    return response


async def send_file_body(
    request: web.Request, response: web.StreamResponse, opened: OpenFile, start: int, length: int
) -> None:
    """Prepare `response` and stream `length` bytes of `opened` from `start`, chunk by chunk."""
    response.content_length = length
    await response.prepare(request)
    if request.method == hdrs.METH_HEAD:
        await response.write_eof()
        return
    loop = asyncio.get_running_loop()
    offset, remaining = start, length
    while remaining > 0:
        chunk = await loop.run_in_executor(
            None, os.pread, opened.fd, min(CHUNK_SIZE, remaining), offset
        )
        if not chunk:
            # The file shrank after the headers went out: the promised length cannot be kept, so
            # the connection is cut rather than left waiting for bytes that will never come.
            _log.warning("file shrank while being served; closing the connection")
            if request.transport is not None:
                request.transport.close()
            return
        await response.write(chunk)
        offset += len(chunk)
        remaining -= len(chunk)
    await response.write_eof()


def parse_single_range(request: web.Request, size: int) -> tuple[int, int] | RangeVerdict:
    """Return (start, end inclusive) for one satisfiable range, else "whole" or "unsatisfiable".

    aiohttp's `request.http_range` does the parsing of one `bytes=` range; it falls short of the
    spec in two places handled here: `bytes=-0` comes back as `slice(0, None)` (the same as
    `bytes=0-`) while the spec wants 416, and a second `Range` header line is silently ignored
    where the spec's "several ranges" means the whole file.
    """
    values = request.headers.getall(hdrs.RANGE, [])
    if len(values) != 1:
        return "whole"
    if _SUFFIX_ZERO.match(values[0]):
        return "unsatisfiable"
    try:
        rng = request.http_range
    except ValueError:
        # Several ranges, a unit other than bytes, garbage or a reversed range: whole file.
        return "whole"
    start, stop = rng.start, rng.stop
    if start is None:  # pragma: no cover - http_range never yields this for a parsed header
        return "whole"
    if start < 0:
        # `bytes=-n`: the last n bytes, all of them when n exceeds the size; none of an empty file.
        start = max(0, size + start)
    if start >= size:
        return "unsatisfiable"
    end = size - 1 if stop is None else min(stop - 1, size - 1)
    return start, end


def strong_etag(opened: OpenFile) -> str:
    """Return the strong entity tag of an open file: its size and modification time (ns)."""
    return f'"{opened.size:x}-{opened.mtime_ns:x}"'


def if_range_holds(request: web.Request, etag: str, mtime_ns: int) -> bool:
    """Return whether a `Range` may be honoured under `If-Range` (RFC 9110 13.1.5).

    No `If-Range` holds. An entity tag holds only when strongly equal to `etag` (a weak tag never
    does). A date holds only when it is exactly the `Last-Modified` this file would send, and that
    time is a strong validator: a whole second or more before now, so a second write within the
    same second cannot hide behind it.
    """
    values = request.headers.getall(hdrs.IF_RANGE, [])
    if not values:
        return True
    if len(values) != 1:
        return False
    value = values[0].strip()
    if value.startswith(('"', "W/")):
        return value == etag
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return False
    if when.tzinfo is None:
        return False
    modified = mtime_ns // 1_000_000_000
    return int(when.timestamp()) == modified and modified + 1 <= time.time()


async def file_response(
    request: web.Request,
    file: str | os.PathLike[str],
    *,
    content_type: str,
    cache_control: str | None = None,
) -> web.StreamResponse:
    """Answer `request` with one file, honouring a single byte range (206/416), If-Range and HEAD.

    A `Range` whose `If-Range` does not match the file's `ETag` or `Last-Modified` is ignored,
    so the answer is 200 with the whole file.
    """
    always = {"Accept-Ranges": "bytes"}
    try:
        opened = open_regular_file(file)
    except OpenRefused as refused:
        text = _FORBIDDEN if refused.status == 403 else _NOT_FOUND
        return plain_response(refused.status, text, always)
    try:
        size = opened.size
        etag = strong_etag(opened)
        wanted: tuple[int, int] | RangeVerdict = "whole"
        if if_range_holds(request, etag, opened.mtime_ns):
            wanted = parse_single_range(request, size)
        if wanted == "unsatisfiable":
            return plain_response(
                416, _NOT_SATISFIABLE, {**always, "Content-Range": f"bytes */{size}"}
            )
        response = web.StreamResponse(status=200)
        response.headers[hdrs.CONTENT_TYPE] = content_type
        response.headers[hdrs.ACCEPT_RANGES] = "bytes"
        response.headers[hdrs.X_CONTENT_TYPE_OPTIONS] = "nosniff"
        # Validators a client can echo in If-Range to resume only the same file.
        response.headers[hdrs.ETAG] = etag
        modified = opened.mtime_ns // 1_000_000_000
        response.headers[hdrs.LAST_MODIFIED] = formatdate(modified, usegmt=True)
        if cache_control is not None:
            response.headers[hdrs.CACHE_CONTROL] = cache_control
        if isinstance(wanted, tuple):
            start, end = wanted
            response.set_status(206)
            response.headers[hdrs.CONTENT_RANGE] = f"bytes {start}-{end}/{size}"
            await send_file_body(request, response, opened, start, end - start + 1)
        else:
            await send_file_body(request, response, opened, 0, size)
        return response
    finally:
        os.close(opened.fd)
