"""Static front-end serving: a built single-page app under `<base>/`, refusing every traversal.

The request path is judged in its raw, still-encoded form (aiohttp has already decoded and
dot-normalised `request.path`), one segment at a time, each decoded exactly once. The segments
are then resolved and opened in one step beneath the root's fd (`_beneath.open_beneath`): a
symlink that stays inside the root is followed, one leading out is refused (403) by the same
step, so no swap between a check and the open can lead outside the root. A symlink cannot reach
a dotfile either: the opened file's own path (`/proc/self/fd`) is judged as a request's is.
"""

from __future__ import annotations

import mimetypes
import os
import re
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from aiohttp import hdrs, web

from ._beneath import open_beneath
from ._files import (
    OpenFile,
    OpenRefused,
    plain_response,
    refused_open,
    regular_file,
    send_file_body,
)

__all__ = ["mount_static_app"]

IMMUTABLE_CACHE = "public, max-age=31536000, immutable"
REVALIDATE_CACHE = "no-cache"

_NOT_BUILT = "Front end not built"
_FORBIDDEN = "Forbidden"
_NOT_FOUND = "Not Found"

_BASE_RE = re.compile(r"^(/(?!\.\.?(?:/|$))[A-Za-z0-9._~-]+)*$")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DRIVE = re.compile(r"^[A-Za-z]:")

# A fixed table so the answer does not depend on the host's /etc/mime.types.
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".webmanifest": "application/manifest+json",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".ico": "image/x-icon",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".wasm": "application/wasm",
    ".pdf": "application/pdf",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
}


def content_type_for(name: str) -> str:
    """Return the content type a file name implies, `application/octet-stream` when unknown."""
    ext = os.path.splitext(name)[1].lower()
    known = _CONTENT_TYPES.get(ext)
    if known is not None:
        return known
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"


def decode_segments(raw_tail: str) -> list[str]:
    """Split a raw path tail on `/` and decode each segment once, refusing every traversal form."""
    segments = raw_tail.split("/")
    decoded: list[str] = []
    for index, raw in enumerate(segments):
        if raw == "":
            # Only a trailing slash may leave an empty segment (a client route like `/docs/`).
            if index == len(segments) - 1:
                continue
            raise OpenRefused(403)
        if _BAD_ESCAPE.search(raw):
            raise OpenRefused(403)
        try:
            segment = unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise OpenRefused(403) from None
        if (
            segment in (".", "..")
            or "/" in segment
            or "\\" in segment
            or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in segment)
            or _DRIVE.match(segment)
            # Dotfiles (.env, .git, .htpasswd) are never served: refused like traversal.
            or segment.startswith(".")
        ):
            raise OpenRefused(403)
        decoded.append(segment)
    return decoded


@dataclass(frozen=True, slots=True, kw_only=True)
class _Target:
    opened: OpenFile
    name: str
    cache_control: str


# O_NONBLOCK keeps open() of a FIFO from waiting for a writer; the fstat check then refuses it.
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def open_target(root: str, segments: list[str], immutable_dir: str) -> _Target | None:
    """Open the file decoded segments name under `root`; None when the front end is not built.

    Resolution and open are one step relative to the root's fd that follows no symlink below the
    root (`open_beneath`), so nothing swapped in while a request is served can lead outside it.
    """
    try:
        root_fd = os.open(root, _ROOT_FLAGS)
    except NotADirectoryError:
        return _single_file(root, segments)
    except OSError:
        return None
    try:
        try:
            index = os.stat("index.html", dir_fd=root_fd)
        except OSError:
            return None
        if not stat.S_ISREG(index.st_mode):
            return None
        last = segments[-1] if segments else ""
        if not os.path.splitext(last)[1]:
            # No extension: a client route of the single-page app.
            segments = ["index.html"]
        try:
            fd = open_beneath(root_fd, segments, _FILE_FLAGS, follow_symlinks=True)
        except OSError as exc:
            raise refused_open(exc) from None
        if _under_a_dot_name(root_fd, fd):
            os.close(fd)
            raise OpenRefused(403)
    finally:
        os.close(root_fd)
    immutable = bool(immutable_dir) and segments[0] == immutable_dir and len(segments) > 1
    return _Target(
        opened=regular_file(fd, not_regular=404),
        name=segments[-1],
        cache_control=IMMUTABLE_CACHE if immutable else REVALIDATE_CACHE,
    )


def _under_a_dot_name(root_fd: int, fd: int) -> bool:
    """True unless the file opened lies beneath the root with no name starting with a dot on
    the way (a symlink inside the root may name a dotfile; the segments asked for were judged)."""
    try:
        root = os.readlink(f"/proc/self/fd/{root_fd}")
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True  # cannot tell: refused, never a yes
    inside = opened[len(root) :] if root != "/" else opened
    if not opened.startswith(root) or not inside.startswith("/"):
        return True
    return any(part.startswith(".") for part in inside.split("/"))


def _single_file(root: str, segments: list[str]) -> _Target | None:
    last = segments[-1] if segments else ""
    if os.path.splitext(last)[1]:
        raise OpenRefused(404)
    # The root itself is the operator's configuration, so a symlink naming it is followed.
    try:
        fd = os.open(root, _FILE_FLAGS)
    except OSError:
        return None
    return _Target(
        opened=regular_file(fd, not_regular=404), name=root, cache_control=REVALIDATE_CACHE
    )


def _owned_elsewhere(
    app: web.Application, own: set[web.AbstractResource]
) -> Callable[[web.Request], Awaitable[None]]:
    async def check(request: web.Request) -> None:
        # aiohttp falls through to the catch-all when a more specific route matches the path but
        # not the method (GET /rpc/x); answer 405 as if the static app were not mounted.
        allowed: set[str] = set()
        for resource in app.router.resources():
            if resource in own:
                continue
            match, methods = await resource.resolve(request)
            if match is None:
                allowed |= methods
        if allowed:
            raise web.HTTPMethodNotAllowed(request.method, allowed)

    return check


def mount_static_app(
    app: web.Application,
    *,
    root: str | os.PathLike[str],
    base: str = "",
    immutable_dir: str = "assets",
) -> None:
    """Serve the built front end at `root` under `<base>/` on `app` (GET only)."""
    if not _BASE_RE.match(base):
        raise ValueError("base must be '' or '/segment[/segment...]' with no trailing slash")
    root_path = os.path.abspath(os.fspath(root))
    own: set[web.AbstractResource] = set()
    owned_elsewhere = _owned_elsewhere(app, own)
    raw_prefix = base + "/"

    async def serve(request: web.Request) -> web.StreamResponse:
        await owned_elsewhere(request)
        raw_path = request.raw_path.split("?", 1)[0].split("#", 1)[0]
        if not raw_path.startswith(raw_prefix):
            # aiohttp routed a dot-normalised or decoded path here that the raw form does not
            # share (`/app/x/..%2F..`): nothing honest can be served.
            return plain_response(403, _FORBIDDEN)
        try:
            segments = decode_segments(raw_path[len(raw_prefix) :])
            target = open_target(root_path, segments, immutable_dir)
        except OpenRefused as refused:
            text = _FORBIDDEN if refused.status == 403 else _NOT_FOUND
            return plain_response(refused.status, text)
        if target is None:
            return plain_response(503, _NOT_BUILT)
        return await _send_whole(request, target)

    resource = app.router.add_resource(base + r"/{tail:[\s\S]*}")
    resource.add_route(hdrs.METH_GET, serve)
    own.add(resource)
    if base:

        async def redirect(request: web.Request) -> web.StreamResponse:
            await owned_elsewhere(request)
            query = request.raw_path.partition("?")[2]
            location = base + "/" + ("?" + query if query else "")
            return web.Response(
                status=308,
                headers={hdrs.LOCATION: location, hdrs.X_CONTENT_TYPE_OPTIONS: "nosniff"},
            )

        base_resource = app.router.add_resource(base)
        base_resource.add_route(hdrs.METH_GET, redirect)
        own.add(base_resource)


def _etag(opened: OpenFile) -> str:
    return f'W/"{opened.size:x}-{opened.mtime_ns:x}"'


def _matches(if_none_match: str, etag: str) -> bool:
    # Weak comparison (RFC 9110 13.1.2): the W/ prefix is ignored on both sides.
    wanted = etag.removeprefix("W/")
    return any(
        tag.strip() == "*" or tag.strip().removeprefix("W/") == wanted
        for tag in if_none_match.split(",")
    )


async def _send_whole(request: web.Request, target: _Target) -> web.StreamResponse:
    opened = target.opened
    try:
        etag = _etag(opened)
        if _matches(request.headers.get(hdrs.IF_NONE_MATCH, ""), etag):
            # no-cache means "revalidate": a validator lets the browser skip the download.
            return web.Response(
                status=304,
                headers={
                    hdrs.ETAG: etag,
                    hdrs.CACHE_CONTROL: target.cache_control,
                    hdrs.X_CONTENT_TYPE_OPTIONS: "nosniff",
                },
            )
        response = web.StreamResponse(status=200)
        response.headers[hdrs.ETAG] = etag
        response.headers[hdrs.CONTENT_TYPE] = content_type_for(target.name)
        response.headers[hdrs.X_CONTENT_TYPE_OPTIONS] = "nosniff"
        response.headers[hdrs.CACHE_CONTROL] = target.cache_control
        # Whole file always: no Accept-Ranges, and a Range header is ignored (spec rule 6).
        await send_file_body(request, response, opened, 0, opened.size)
        return response
    finally:
        os.close(opened.fd)
