"""The gate's pieces below the app: what a peer counts as local, the session cookie's fast
read (the same value as aiohttp's parser), and that `_auth` loads without the gate."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from local_daemon import AuthRecord, DaemonAuth, create_daemon_auth, ensure_token_file
from local_daemon._gate import gate_middleware
from local_daemon._peer import IPAddress, is_local_peer, local_interface_addresses
from local_daemon._types import AUTH_RECORD_KEY


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def auth(token_file: Path) -> DaemonAuth:
    return create_daemon_auth(token_file)


def _bearer(token_file: Path) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_file.read_text().strip()}"}


class TestPeerLocal:
    async def test_unknown_peer_is_local(self, auth: DaemonAuth, token_file: Path) -> None:
        request = make_mocked_request("GET", "/whoami", headers=_bearer(token_file))
        assert request.remote is None
        seen: list[AuthRecord] = []

        async def handler(req: web.Request) -> web.StreamResponse:
            seen.append(req[AUTH_RECORD_KEY])
            return web.Response()

        await gate_middleware(auth)(request, handler)
        assert seen == [
            AuthRecord(
                credential="bearer", issued_at=int(token_file.stat().st_mtime), peer_local=True
            )
        ]

    @pytest.mark.parametrize(
        ("peer", "local"),
        [
            (None, True),
            ("", True),
            ("127.0.0.1", True),
            ("127.8.9.10", True),
            ("::1", True),
            ("::ffff:127.0.0.1", True),
            ("203.0.113.9", False),
            ("2001:db8::9", False),
            ("::ffff:203.0.113.9", False),
        ],
    )
    def test_rows(self, peer: str | None, local: bool) -> None:
        assert is_local_peer(peer) is local

    def test_own_interface_addresses_are_local(self) -> None:
        addresses = local_interface_addresses()
        assert any(a.is_loopback for a in addresses)
        for address in addresses:
            assert is_local_peer(str(address))

    def test_interface_addresses_are_read_on_every_call(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The parse of a peer string is cached; whether it is one of ours is not.
        from local_daemon import _peer

        own: set[IPAddress] = set()
        reads: list[int] = []

        def addresses() -> frozenset[IPAddress]:
            reads.append(1)
            return frozenset(own)

        monkeypatch.setattr(_peer, "local_interface_addresses", addresses)
        assert is_local_peer("198.51.100.7") is False
        own.add(ipaddress.ip_address("198.51.100.7"))
        assert is_local_peer("198.51.100.7") is True
        own.clear()
        assert is_local_peer("::ffff:198.51.100.7") is False
        assert is_local_peer("127.0.0.1") is True
        assert len(reads) == 3


_COOKIE = "v2.1763890000." + "Ab-_9" * 4 + "xy." + "Ab-_9" * 8 + "xyz"
_OTHER = "v2.1763890001." + "Zz09_" * 4 + "-q." + "Zz09_" * 8 + "-q-"


class TestSessionCookieValue:
    """The gate reads the session cookie as aiohttp's own parser would, fast path or not."""

    @pytest.mark.parametrize(
        "header",
        [
            f"local_session={_COOKIE}",
            f"local_session={_COOKIE};",
            f" local_session={_COOKIE}",
            f"local_session={_COOKIE} ",
            f"local_session = {_COOKIE}",
            f'local_session="{_COOKIE}"',
            f"local_session={_COOKIE}; local_session={_OTHER}",
            f"theme=dark; local_session={_COOKIE}",
            f"local_session={_COOKIE}; theme=dark",
            f'a="x; local_session={_OTHER}"; local_session={_COOKIE}',
            f"local_session={_COOKIE}x",
            f"local_session={_COOKIE[:-1]}",
            f"local_session=v1.1234567890123.{_COOKIE[-43:]}",
            f"Local_Session={_COOKIE}",
            f"local_session={_COOKIE}\t",
            "local_session=",
            "local_session",
            "theme=dark",
            "",
        ],
    )
    def test_same_value_as_aiohttp(self, header: str) -> None:
        from local_daemon._gate import session_cookie_value

        request = make_mocked_request("GET", "/", headers={"Cookie": header} if header else {})
        assert session_cookie_value(request) == request.cookies.get("local_session")

    def test_the_usual_header_skips_the_full_parser(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from local_daemon._gate import session_cookie_value

        def parsed(request: web.BaseRequest) -> None:
            raise AssertionError("parsed the whole Cookie header")

        request = make_mocked_request("GET", "/", headers={"Cookie": f"local_session={_COOKIE}"})
        monkeypatch.setattr(web.BaseRequest, "cookies", property(parsed))
        assert session_cookie_value(request) == _COOKIE


def test_create_gate_is_the_auth_itself(auth: DaemonAuth) -> None:
    from local_daemon._gate import create_gate

    assert create_gate(auth) is auth


def test_auth_never_imports_the_gate() -> None:
    # The cycle is gone: `_auth` loads alone, and the app installs the gate around a DaemonAuth.
    import subprocess
    import sys

    probe = (
        "import sys, local_daemon._auth; "
        "print(sorted(m for m in sys.modules if m == 'local_daemon._gate'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
    assert not hasattr(DaemonAuth, "middleware")
