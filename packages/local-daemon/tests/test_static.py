from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from daemon_raw_http import RawResponse, raw_request, serve_app
from local_daemon import mount_static_app

# What the spec gives files under `immutableDir`.
IMMUTABLE_CACHE = "public, max-age=31536000, immutable"

SECRET = b"TOP-SECRET-OUTSIDE-ROOT"
INDEX = b"<!doctype html><title>app</title>"
APP_JS = b"console.log('app')"


def build(dist: Path) -> None:
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "index.html").write_bytes(INDEX)
    (dist / "assets").mkdir()
    (dist / "assets" / "app.abc123.js").write_bytes(APP_JS)
    (dist / "assets" / ".hidden.js").write_bytes(SECRET)
    (dist / "favicon.ico").write_bytes(b"\x00\x00\x01\x00")
    (dist / "robots.txt").write_bytes(b"User-agent: *")
    (dist / "sub").mkdir()
    (dist / "sub" / "page.css").write_bytes(b"body{}")
    (dist / ".env").write_bytes(SECRET)
    (dist / ".git").mkdir()
    (dist / ".git" / "config").write_bytes(SECRET)
    (dist / "link-out.txt").symlink_to(dist.parent / "secret.txt")
    (dist / "link-out-dir").symlink_to(dist.parent)
    (dist / "link-dot.txt").symlink_to(dist / ".env")
    (dist / "link-in.js").symlink_to(dist / "assets" / "app.abc123.js")
    (dist / "link-in-rel.js").symlink_to("assets/app.abc123.js")
    (dist / "link-in-dir").symlink_to("assets")
    (dist / "sub" / "link-up.js").symlink_to("../assets/app.abc123.js")
    (dist / "link-out-rel.txt").symlink_to("../secret.txt")
    (dist / "sub" / "link-out-up.txt").symlink_to("../../secret.txt")
    (dist / "link-dot-dir.js").symlink_to(".git/config")
    (dist / "link-loop.js").symlink_to("link-loop.js")
    (dist / "dir.d").mkdir()
    (dist / "C:x.js").write_bytes(SECRET)
    (dist / "a\\b.js").write_bytes(SECRET)
    (dist / "%2e%2e").mkdir()


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_bytes(SECRET)
    target = tmp_path / "dist"
    build(target)
    return target


async def _ok(_: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def core_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/health", _ok)
    app.router.add_get("/events", _ok)
    app.router.add_post("/rpc/{name}", _ok)
    return app


@pytest.fixture
async def port(dist: Path) -> AsyncIterator[int]:
    app = core_app()
    mount_static_app(app, root=dist)
    async with serve_app(app) as bound:
        yield bound


@pytest.fixture
async def base_port(dist: Path) -> AsyncIterator[int]:
    app = core_app()
    mount_static_app(app, root=dist, base="/app")
    async with serve_app(app) as bound:
        yield bound


def no_leak(resp: RawResponse) -> None:
    assert SECRET not in resp.body


TRAVERSAL = [
    "/..%2fsecret.txt",
    "/..%2Fsecret.txt",
    "/%2e%2e/secret.txt",
    "/%2E%2E/secret.txt",
    "/%2e%2e%2fsecret.txt",
    "/.%2e/secret.txt",
    "/%2e/index.html",
    "/./index.html",
    "/../secret.txt",
    "/assets/../../secret.txt",
    "/assets%2fapp.abc123.js",
    "/assets%2Fapp.abc123.js",
    "/assets%5capp.abc123.js",
    "/assets%5Capp.abc123.js",
    "/assets\\app.abc123.js",
    "/..\\secret.txt",
    "/a%5cb.js",
    "/index.html%00.js",
    "/%00",
    "/%00.js",
    "/assets/app.abc123.js%00",
    "/sub%0a/page.css",
    "/C:/Windows/win.ini",
    "/c:%5cwindows%5cwin.ini",
    "/C%3A/x.js",
    "/C:x.js",
    "/sub/d:/x.js",
    "/%zz.js",
    "/%2.js",
    "/%",
    "/abc%2",
    "/%g0/x.js",
    "/%c0%ae%c0%ae/secret.txt",  # overlong UTF-8 dot: not valid UTF-8
    "/%ff.js",
    "/a//b.js",
    "//secret.txt",
    "/link-out.txt",  # symlink leading out of the root
    "/link-out-dir/secret.txt",
    "/link-out-rel.txt",
    "/sub/link-out-up.txt",
    "/link-dot.txt",  # symlink inside the root onto a dotfile
    "/link-dot-dir.js",  # ... or onto a file in a dot directory
    "/link-loop.js",
    "/.env",
    "/%2eenv",
    "/.git/config",
    "/.git",
    "/assets/.hidden.js",
    "/assets/%2ehidden.js",
]


# Both ways of opening beneath the root (openat2, and the walk for kernels without it) follow
# these links the same way: tests/internal/test_beneath.py.
@pytest.mark.parametrize(
    "target",
    ["/link-in.js", "/link-in-rel.js", "/link-in-dir/app.abc123.js", "/sub/link-up.js"],
)
async def test_a_symlink_staying_inside_the_root_is_served(dist: Path, target: str) -> None:
    app = web.Application()
    mount_static_app(app, root=dist)
    async with serve_app(app) as bound:
        resp = await raw_request(bound, "GET", target)
        assert (resp.status, resp.body) == (200, APP_JS), target
        for refused in ("/link-out-rel.txt", "/sub/link-out-up.txt", "/link-dot.txt"):
            resp = await raw_request(bound, "GET", refused)
            assert (resp.status, resp.body) == (403, b"Forbidden"), refused


@pytest.mark.parametrize("target", TRAVERSAL)
async def test_traversal_is_403(port: int, target: str) -> None:
    resp = await raw_request(port, "GET", target)
    assert resp.status == 403, target
    assert resp.body == b"Forbidden"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    no_leak(resp)


@pytest.mark.parametrize("target", [t for t in TRAVERSAL if not t.startswith("//")])
async def test_traversal_is_403_under_a_base(base_port: int, target: str) -> None:
    resp = await raw_request(base_port, "GET", "/app" + target)
    assert resp.status in (403, 404), target
    # Only dot-segment forms that aiohttp itself normalises out of /app may miss the route.
    if resp.status == 404:
        assert "/../" in target or "/./" in target
    no_leak(resp)


async def test_each_segment_is_decoded_once(port: int) -> None:
    # %252e%252e decodes once to the literal name "%2e%2e" (a directory that exists), never to ".."
    resp = await raw_request(port, "GET", "/%252e%252e/secret.txt")
    assert resp.status == 404
    no_leak(resp)


@pytest.mark.parametrize(
    ("target", "body", "ctype", "cache"),
    [
        ("/", INDEX, "text/html; charset=utf-8", "no-cache"),
        ("/index.html", INDEX, "text/html; charset=utf-8", "no-cache"),
        ("/some/client/route", INDEX, "text/html; charset=utf-8", "no-cache"),
        ("/docs/", INDEX, "text/html; charset=utf-8", "no-cache"),
        ("/settings?tab=x", INDEX, "text/html; charset=utf-8", "no-cache"),
        ("/assets/app.abc123.js", APP_JS, "text/javascript; charset=utf-8", IMMUTABLE_CACHE),
        ("/%61ssets/app.abc123.js", APP_JS, "text/javascript; charset=utf-8", IMMUTABLE_CACHE),
        ("/favicon.ico", b"\x00\x00\x01\x00", "image/x-icon", "no-cache"),
        ("/robots.txt", b"User-agent: *", "text/plain; charset=utf-8", "no-cache"),
        ("/sub/page.css", b"body{}", "text/css; charset=utf-8", "no-cache"),
    ],
)
async def test_serves_files_and_spa_fallback(
    port: int, target: str, body: bytes, ctype: str, cache: str
) -> None:
    resp = await raw_request(port, "GET", target)
    assert resp.status == 200
    assert resp.body == body
    assert resp.headers["Content-Type"] == ctype
    assert resp.headers["Cache-Control"] == cache
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert "Accept-Ranges" not in resp.headers


@pytest.mark.parametrize(
    "target", ["/missing.js", "/assets/missing.js", "/dir.d", "/sub/missing.css", "/v1.2"]
)
async def test_missing_file_with_extension_is_404(port: int, target: str) -> None:
    resp = await raw_request(port, "GET", target)
    assert resp.status == 404
    assert resp.body == b"Not Found"


async def test_range_is_ignored(port: int) -> None:
    resp = await raw_request(port, "GET", "/assets/app.abc123.js", headers={"Range": "bytes=0-3"})
    assert resp.status == 200
    assert resp.body == APP_JS
    assert "Accept-Ranges" not in resp.headers
    assert "Content-Range" not in resp.headers


@pytest.mark.parametrize("method", ["HEAD", "POST", "PUT", "DELETE"])
async def test_only_get_is_registered(port: int, method: str) -> None:
    resp = await raw_request(port, method, "/index.html")
    assert resp.status == 405
    assert resp.headers["Allow"] == "GET"


async def test_core_routes_are_not_shadowed(port: int) -> None:
    health = await raw_request(port, "GET", "/health")
    assert health.body == b'{"ok": true}'
    events = await raw_request(port, "GET", "/events")
    assert events.body == b'{"ok": true}'
    rpc_get = await raw_request(port, "GET", "/rpc/anything")
    assert rpc_get.status == 405
    assert rpc_get.headers["Allow"] == "POST"
    rpc_post = await raw_request(
        port, "POST", "/rpc/anything", body=b"{}", headers={"Content-Type": "application/json"}
    )
    assert rpc_post.status == 200


async def test_base_redirects_with_308(base_port: int) -> None:
    resp = await raw_request(base_port, "GET", "/app")
    assert resp.status == 308
    assert resp.headers["Location"] == "/app/"
    with_query = await raw_request(base_port, "GET", "/app?x=1&y=%2F")
    assert with_query.status == 308
    assert with_query.headers["Location"] == "/app/?x=1&y=%2F"


async def test_base_serves_under_prefix_only(base_port: int) -> None:
    index = await raw_request(base_port, "GET", "/app/")
    assert (index.status, index.body) == (200, INDEX)
    route = await raw_request(base_port, "GET", "/app/deep/route")
    assert (route.status, route.body) == (200, INDEX)
    asset = await raw_request(base_port, "GET", "/app/assets/app.abc123.js")
    assert asset.headers["Cache-Control"] == IMMUTABLE_CACHE
    outside = await raw_request(base_port, "GET", "/index.html")
    assert outside.status == 404
    near = await raw_request(base_port, "GET", "/application")
    assert near.status == 404


async def test_not_built_is_503_until_built(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    app = core_app()
    mount_static_app(app, root=dist)
    async with serve_app(app) as bound:
        for target in ("/", "/route", "/assets/app.abc123.js"):
            resp = await raw_request(bound, "GET", target)
            assert resp.status == 503
            assert resp.body == b"Front end not built"
            assert resp.headers["Cache-Control"] == "no-store"
        dist.mkdir()  # a directory without index.html is still not built
        assert (await raw_request(bound, "GET", "/")).status == 503
        (tmp_path / "secret.txt").write_bytes(SECRET)
        build_target = tmp_path / "built"
        build(build_target)
        dist.rmdir()
        dist.symlink_to(build_target)
        resp = await raw_request(bound, "GET", "/")
        assert (resp.status, resp.body) == (200, INDEX)
        asset = await raw_request(bound, "GET", "/assets/app.abc123.js")
        assert (asset.status, asset.body) == (200, APP_JS)


async def test_single_html_file_root(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(INDEX)
    (tmp_path / "other.js").write_bytes(SECRET)
    app = core_app()
    mount_static_app(app, root=page)
    async with serve_app(app) as bound:
        for target in ("/", "/route/x", "/docs/"):
            resp = await raw_request(bound, "GET", target)
            assert (resp.status, resp.body) == (200, INDEX)
            assert resp.headers["Cache-Control"] == "no-cache"
        other = await raw_request(bound, "GET", "/other.js")
        assert other.status == 404
        no_leak(other)
        dots = await raw_request(bound, "GET", "/%2e%2e/x")
        assert dots.status == 403


@pytest.mark.parametrize("base", ["app", "/app/", "/a b", "/../x", "//x", "/"])
def test_bad_base_is_refused(dist: Path, base: str) -> None:
    with pytest.raises(ValueError, match="base"):
        mount_static_app(web.Application(), root=dist, base=base)


async def test_revalidation_with_etag(port: int, dist: Path) -> None:
    first = await raw_request(port, "GET", "/index.html")
    etag = first.headers["ETag"]
    assert etag.startswith('W/"')
    again = await raw_request(port, "GET", "/", headers={"If-None-Match": etag})
    assert again.status == 304
    assert again.body == b""
    assert again.headers["Cache-Control"] == "no-cache"
    listed = await raw_request(
        port, "GET", "/index.html", headers={"If-None-Match": f'"other", {etag}'}
    )
    assert listed.status == 304
    (dist / "index.html").write_bytes(INDEX + b"<p>rebuilt</p>")
    changed = await raw_request(port, "GET", "/index.html", headers={"If-None-Match": etag})
    assert changed.status == 200
    assert changed.body.endswith(b"<p>rebuilt</p>")
    assert changed.headers["ETag"] != etag
