from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from daemon_raw_http import RawResponse, raw_request, serve_app
from local_daemon import file_response

# Larger than the size file_response reads at a time (256 KiB), so the files and ranges below
# span several of its reads.
CHUNK_SIZE = 256 * 1024

SECRET_DIR = "secret-dir-name-canary"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    base = tmp_path / SECRET_DIR
    base.mkdir()
    (base / "ten.bin").write_bytes(b"0123456789")
    (base / "empty.bin").write_bytes(b"")
    (base / "big.bin").write_bytes(bytes(range(256)) * (3 * CHUNK_SIZE // 256 + 7))
    (base / "outside.txt").write_text("outside")
    (base / "link.bin").symlink_to(base / "ten.bin")
    os.mkfifo(base / "fifo")
    (base / "dir").mkdir()
    return base


@pytest.fixture
async def port(files: Path) -> AsyncIterator[int]:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await file_response(
            request,
            files / request.match_info["name"],
            content_type="application/octet-stream",
            cache_control="private, max-age=60",
        )

    app = web.Application()
    app.router.add_route("GET", "/f/{name}", handler)
    app.router.add_route("HEAD", "/f/{name}", handler)
    async with serve_app(app) as bound:
        yield bound


async def get(port: int, name: str, rng: str | None = None, method: str = "GET") -> RawResponse:
    headers = {"Range": rng} if rng is not None else {}
    return await raw_request(port, method, f"/f/{name}", headers=headers)


def assert_always(resp: RawResponse) -> None:
    assert resp.headers["Accept-Ranges"] == "bytes"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert SECRET_DIR.encode() not in resp.body
    assert all(SECRET_DIR not in v for v in resp.headers.values())


@pytest.mark.parametrize(
    ("rng", "start", "end"),
    [
        ("bytes=2-5", 2, 5),
        ("bytes=0-0", 0, 0),
        ("bytes=9-9", 9, 9),
        ("bytes=3-", 3, 9),
        ("bytes=0-", 0, 9),
        ("bytes=-4", 6, 9),
        ("bytes=-1", 9, 9),
        ("bytes=-10", 0, 9),
        ("bytes=-99", 0, 9),  # suffix longer than the file: all of it
        ("bytes=4-99", 4, 9),  # end past the size is clamped
        ("bytes=4-9", 4, 9),
        ("BYTES=1-2", 1, 2),  # the unit is case-insensitive
    ],
)
async def test_single_range_is_206(port: int, rng: str, start: int, end: int) -> None:
    resp = await get(port, "ten.bin", rng)
    assert resp.status == 206
    assert resp.headers["Content-Range"] == f"bytes {start}-{end}/10"
    assert resp.body == b"0123456789"[start : end + 1]
    assert resp.headers["Content-Length"] == str(end - start + 1)
    assert resp.headers["Content-Type"] == "application/octet-stream"
    assert resp.headers["Cache-Control"] == "private, max-age=60"
    assert_always(resp)


@pytest.mark.parametrize(
    ("name", "rng", "size"),
    [
        ("ten.bin", "bytes=10-", 10),
        ("ten.bin", "bytes=10-20", 10),
        ("ten.bin", "bytes=99-", 10),
        ("ten.bin", "bytes=-0", 10),
        ("ten.bin", "bytes=-000", 10),
        ("empty.bin", "bytes=0-", 0),
        ("empty.bin", "bytes=-5", 0),
    ],
)
async def test_unsatisfiable_is_416(port: int, name: str, rng: str, size: int) -> None:
    resp = await get(port, name, rng)
    assert resp.status == 416
    assert resp.headers["Content-Range"] == f"bytes */{size}"
    assert resp.body == b"Range Not Satisfiable"
    assert_always(resp)


@pytest.mark.parametrize(
    "rng",
    [
        None,
        "bytes=0-1,3-4",  # several ranges: whole file
        "bytes=1-2, 5-6",
        "bytes=5-2",  # reversed
        "bytes=-",
        "bytes=",
        "bytes=a-b",
        "items=0-3",
        "0-3",
        "bytes=1-2-3",
    ],
)
async def test_no_or_malformed_or_multiple_ranges_give_whole_file(
    port: int, rng: str | None
) -> None:
    resp = await get(port, "ten.bin", rng)
    assert resp.status == 200
    assert resp.body == b"0123456789"
    assert resp.headers["Content-Length"] == "10"
    assert "Content-Range" not in resp.headers
    assert_always(resp)


async def test_two_range_header_lines_give_whole_file(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"GET /f/ten.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Range: bytes=0-1\r\nRange: bytes=4-5\r\n\r\n"
        )
        data = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
        await writer.wait_closed()
    assert data.startswith(b"HTTP/1.1 200")
    assert data.endswith(b"\r\n\r\n0123456789")


async def test_empty_file_whole(port: int) -> None:
    resp = await get(port, "empty.bin")
    assert resp.status == 200
    assert resp.body == b""
    assert resp.headers["Content-Length"] == "0"


@pytest.mark.parametrize(("rng", "status", "length"), [(None, 200, 10), ("bytes=2-4", 206, 3)])
async def test_head_sends_headers_only(
    port: int, rng: str | None, status: int, length: int
) -> None:
    resp = await get(port, "ten.bin", rng, method="HEAD")
    assert resp.status == status
    assert resp.headers["Content-Length"] == str(length)
    assert resp.body == b""
    assert_always(resp)


async def test_big_file_streams_exact_bytes_across_chunks(port: int, files: Path) -> None:
    data = (files / "big.bin").read_bytes()
    whole = await get(port, "big.bin")
    assert whole.status == 200
    assert whole.body == data
    start, end = CHUNK_SIZE - 3, 2 * CHUNK_SIZE + 5
    part = await get(port, "big.bin", f"bytes={start}-{end}")
    assert part.status == 206
    assert part.body == data[start : end + 1]
    assert part.headers["Content-Range"] == f"bytes {start}-{end}/{len(data)}"


@pytest.mark.parametrize(
    ("name", "status", "text"),
    [
        ("link.bin", 403, b"Forbidden"),  # symlink at the last component
        ("fifo", 403, b"Forbidden"),  # not a regular file; open does not block
        ("dir", 403, b"Forbidden"),
        ("missing.bin", 404, b"Not Found"),
    ],
)
async def test_refusals_have_fixed_texts(port: int, name: str, status: int, text: bytes) -> None:
    resp = await get(port, name, "bytes=0-1")
    assert resp.status == status
    assert resp.body == text
    assert "Content-Range" not in resp.headers
    assert_always(resp)


async def test_missing_parent_is_404(tmp_path: Path) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await file_response(
            request, tmp_path / "no" / "such" / "file", content_type="text/plain"
        )

    app = web.Application()
    app.router.add_get("/x", handler)
    async with serve_app(app) as bound:
        resp = await raw_request(bound, "GET", "/x")
    assert resp.status == 404
    assert str(tmp_path).encode() not in resp.body


def _set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, ns=(seconds * 1_000_000_000, seconds * 1_000_000_000))


async def test_validators_are_sent(port: int, files: Path) -> None:
    _set_mtime(files / "ten.bin", 1_700_000_000)
    resp = await get(port, "ten.bin")
    assert resp.headers["ETag"] == f'"a-{1_700_000_000 * 1_000_000_000:x}"'
    assert resp.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT"
    ranged = await get(port, "ten.bin", "bytes=2-5")
    assert ranged.headers["ETag"] == resp.headers["ETag"]


async def test_if_range_matching_etag_or_date_serves_the_range(port: int, files: Path) -> None:
    _set_mtime(files / "ten.bin", 1_700_000_000)
    first = await get(port, "ten.bin")
    for validator in (first.headers["ETag"], first.headers["Last-Modified"]):
        resp = await raw_request(
            port, "GET", "/f/ten.bin", headers={"Range": "bytes=2-5", "If-Range": validator}
        )
        assert (resp.status, resp.body) == (206, b"2345"), validator
        assert resp.headers["Content-Range"] == "bytes 2-5/10"


@pytest.mark.parametrize("rng", ["bytes=2-5", "bytes=50-", "bytes=-0"])
async def test_if_range_not_matching_sends_the_whole_file(port: int, files: Path, rng: str) -> None:
    _set_mtime(files / "ten.bin", 1_700_000_000)
    etag = (await get(port, "ten.bin")).headers["ETag"]
    stale = [
        '"0-0"',  # another file's tag
        "W/" + etag,  # a weak tag never matches in If-Range (strong comparison)
        "Tue, 14 Nov 2023 22:13:21 GMT",  # a date one second off
        "Tue, 14 Nov 2023 22:13:20",  # no zone: not an HTTP-date
        "not a validator",
    ]
    for validator in stale:
        resp = await raw_request(
            port, "GET", "/f/ten.bin", headers={"Range": rng, "If-Range": validator}
        )
        assert (resp.status, resp.body) == (200, b"0123456789"), validator
        assert "Content-Range" not in resp.headers
        assert resp.headers["ETag"] == etag
        assert_always(resp)


async def test_if_range_after_the_file_changed_sends_the_whole_file(port: int, files: Path) -> None:
    _set_mtime(files / "ten.bin", 1_700_000_000)
    first = await get(port, "ten.bin")
    (files / "ten.bin").write_bytes(b"abcdefghij")  # same size, new content
    _set_mtime(files / "ten.bin", 1_700_000_001)
    for validator in (first.headers["ETag"], first.headers["Last-Modified"]):
        resp = await raw_request(
            port, "GET", "/f/ten.bin", headers={"Range": "bytes=2-5", "If-Range": validator}
        )
        assert (resp.status, resp.body) == (200, b"abcdefghij"), validator


async def test_if_range_date_of_a_file_modified_this_second_is_weak(port: int, files: Path) -> None:
    # A second write within the same second would keep the same Last-Modified, so a date naming
    # the current second does not prove the client holds these bytes (RFC 9110 8.8.2.2).
    (files / "ten.bin").write_bytes(b"0123456789")
    future = int(time.time()) + 3600
    _set_mtime(files / "ten.bin", future)
    last_modified = (await get(port, "ten.bin")).headers["Last-Modified"]
    resp = await raw_request(
        port, "GET", "/f/ten.bin", headers={"Range": "bytes=2-5", "If-Range": last_modified}
    )
    assert resp.status == 200
