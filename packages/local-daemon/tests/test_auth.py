from __future__ import annotations

import base64
import hashlib
import hmac
import os
import traceback
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from local_daemon import (
    DaemonAuth,
    TokenFileError,
    create_daemon_auth,
    ensure_token_file,
    mint_login_code,
    rotate_token_file,
)

# The spec's limits: a login code lives 10 minutes, a session cookie 30 days.
CODE_LIFETIME_SECONDS = 10 * 60
SESSION_LIFETIME_SECONDS = 30 * 24 * 60 * 60
DEFAULT_SIGN_IN_HINT = "Ask the operator of this daemon for a fresh sign-in link."

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    return ensure_token_file(tmp_path / "token")


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def auth(token_file: Path, clock: Clock) -> DaemonAuth:
    return create_daemon_auth(token_file, clock=clock)


def _secret(token_file: Path) -> str:
    return token_file.read_text().strip()


class TestLoginCode:
    def test_shape(self, token_file: Path) -> None:
        code = mint_login_code(token_file, now=T0)
        version, issued, nonce, mac = code.split(".")
        assert version == "v1"
        assert issued == str(int(T0) * 1_000_000_000)  # nanoseconds
        assert len(base64.urlsafe_b64decode(nonce + "==")) == 16
        assert len(base64.urlsafe_b64decode(mac + "=")) == 32
        assert _secret(token_file) not in code

    def test_spent_once_per_process(self, auth: DaemonAuth, token_file: Path, clock: Clock) -> None:
        code = mint_login_code(token_file, now=T0 + 1)
        clock.now = T0 + 2
        assert auth.spend_login_code(code) is True
        assert auth.spend_login_code(code) is False
        # A second daemon process started after the code was minted would refuse it anyway.
        later = create_daemon_auth(token_file, clock=clock)
        assert later.spend_login_code(code) is False

    def test_minted_before_start_is_exact_within_a_second(self, token_file: Path) -> None:
        # The real clock: a code minted just before the process started, in the same wall-clock
        # second as the start, may have been spent by the previous process; refused. One minted
        # right after the start is good.
        before = mint_login_code(token_file)
        auth = create_daemon_auth(token_file)
        after = mint_login_code(token_file)
        assert auth.spend_login_code(before) is False
        assert auth.spend_login_code(after) is True

    @pytest.mark.parametrize(("offset", "ok"), [(-1e-6, False), (0.0, True), (1e-6, True)])
    def test_start_boundary_below_a_second(
        self, token_file: Path, clock: Clock, offset: float, ok: bool
    ) -> None:
        auth = create_daemon_auth(token_file, clock=clock, started_at=T0 + 0.5)
        code = mint_login_code(token_file, now=T0 + 0.5 + offset)
        clock.now = T0 + 2
        assert auth.spend_login_code(code) is ok

    def test_two_codes_spend_independently(self, auth: DaemonAuth, token_file: Path) -> None:
        a, b = mint_login_code(token_file, now=T0), mint_login_code(token_file, now=T0)
        assert a != b
        assert auth.spend_login_code(a)
        assert auth.spend_login_code(b)

    @pytest.mark.parametrize(
        ("minted", "used", "ok"),
        [
            (T0, T0 + CODE_LIFETIME_SECONDS, True),
            (T0, T0 + CODE_LIFETIME_SECONDS + 1, False),
            (T0 - 1, T0, False),  # minted before the process started
            (T0 + 60, T0 + 30, False),  # from the future
        ],
        ids=["10 minutes", "over 10 minutes", "before start", "future"],
    )
    def test_age_rows(
        self, auth: DaemonAuth, token_file: Path, clock: Clock, minted: float, used: float, ok: bool
    ) -> None:
        code = mint_login_code(token_file, now=minted)
        clock.now = used
        assert auth.spend_login_code(code) is ok

    @pytest.mark.parametrize(
        "mangle",
        [
            lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),
            lambda c: c.replace("v1.", "v2.", 1),
            lambda c: c + ".x",
            lambda c: "",
            lambda c: "v1." + str(int(T0) + 1) + c[len("v1.") + len(str(int(T0))) :],
        ],
        ids=["mac", "version", "extra", "empty", "issued_at changed"],
    )
    def test_tampered_codes(self, auth: DaemonAuth, token_file: Path, mangle: object) -> None:
        assert callable(mangle)
        code = mangle(mint_login_code(token_file, now=T0))
        assert auth.spend_login_code(code) is False

    def test_rotation_voids_codes(self, auth: DaemonAuth, token_file: Path) -> None:
        code = mint_login_code(token_file, now=T0)
        rotate_token_file(token_file)
        assert auth.spend_login_code(code) is False


class TestSessionCookie:
    def test_round_trip(self, auth: DaemonAuth) -> None:
        value = auth.issue_session_cookie()
        version, issued, session_id, mac = value.split(".")
        assert (version, issued, len(session_id), len(mac)) == ("v2", str(int(T0)), 22, 43)
        verified = auth.verify_session_cookie(value)
        assert verified is not None
        assert verified.credential == "session"
        assert verified.issued_at == int(T0)
        assert verified.session_id == session_id

    def test_a_v1_cookie_without_an_id_is_refused(self, auth: DaemonAuth) -> None:
        _version, issued, _id, mac = auth.issue_session_cookie().split(".")
        assert auth.verify_session_cookie(f"v1.{issued}.{mac}") is None

    def test_survives_a_restart(self, auth: DaemonAuth, token_file: Path, clock: Clock) -> None:
        value = auth.issue_session_cookie()
        clock.now = T0 + 3600
        assert create_daemon_auth(token_file, clock=clock).verify_session_cookie(value) is not None

    @pytest.mark.parametrize(
        ("age", "ok"),
        [(SESSION_LIFETIME_SECONDS - 1, True), (SESSION_LIFETIME_SECONDS, False), (-1, False)],
        ids=["just under 30 days", "30 days", "from the future"],
    )
    def test_lifetime_rows(self, auth: DaemonAuth, clock: Clock, age: int, ok: bool) -> None:
        value = auth.issue_session_cookie()
        clock.now = T0 + age
        assert (auth.verify_session_cookie(value) is not None) is ok

    def test_rotation_voids_sessions(self, auth: DaemonAuth, token_file: Path) -> None:
        value = auth.issue_session_cookie()
        rotate_token_file(token_file)
        assert auth.verify_session_cookie(value) is None

    @pytest.mark.parametrize(
        "value",
        [
            "",
            "v1",
            "v1.abc.def",
            "v1.1800000000." + "A" * 43,
            "v2.1800000000." + "A" * 22 + "." + "A" * 43,
            "v2.1800000000." + "A" * 22 + "." + "A" * 44,
            "v2.1800000000." + "A" * 21 + "." + "A" * 43,
        ],
    )
    def test_garbage(self, auth: DaemonAuth, value: str) -> None:
        assert auth.verify_session_cookie(value) is None


class TestKeys:
    """Separate HKDF keys: no kind's MAC works as another's, and none uses the raw secret."""

    def test_a_code_mac_is_not_a_cookie(self, auth: DaemonAuth, token_file: Path) -> None:
        _v, _issued, nonce, mac = mint_login_code(token_file, now=T0).split(".")
        assert auth.verify_session_cookie(f"v2.{int(T0)}.{nonce}.{mac}") is None

    def test_cookie_mac_uses_the_derived_key_not_the_secret(
        self, auth: DaemonAuth, token_file: Path
    ) -> None:
        secret = token_file.read_text().strip()
        raw = base64.urlsafe_b64decode(secret + "=")
        session_id = auth.issue_session_cookie().split(".")[2]  # a session the file lists
        body = f"v2.{int(T0)}.{session_id}"
        for key in (secret.encode(), raw):
            forged = base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest())
            assert auth.verify_session_cookie(f"{body}.{forged.rstrip(b'=').decode()}") is None
        hkdf = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"local-daemon v1 session cookie"
        )
        key = hkdf.derive(raw)
        good = base64.urlsafe_b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest())
        assert auth.verify_session_cookie(f"{body}.{good.rstrip(b'=').decode()}") is not None


class TestBearer:
    def test_the_secret_is_the_bearer(self, auth: DaemonAuth, token_file: Path) -> None:
        verified = auth.verify_bearer(_secret(token_file))
        assert verified is not None
        assert verified.credential == "bearer"
        assert verified.issued_at == int(token_file.stat().st_mtime)

    @pytest.mark.parametrize("token", ["", "x", "é" * 43, "\ud800"])
    def test_wrong_tokens(self, auth: DaemonAuth, token: str) -> None:
        assert auth.verify_bearer(token) is None

    def test_rotation_voids_the_old_bearer(self, auth: DaemonAuth, token_file: Path) -> None:
        old = _secret(token_file)
        rotate_token_file(token_file)
        assert auth.verify_bearer(old) is None
        assert auth.verify_bearer(_secret(token_file)) is not None


def test_create_checks_the_file_at_once(tmp_path: Path) -> None:
    path = ensure_token_file(tmp_path / "token")
    os.chmod(path, 0o644)
    with pytest.raises(TokenFileError) as info:
        create_daemon_auth(path)
    assert info.value.problem == "mode"
    with pytest.raises(TokenFileError):
        mint_login_code(path)


def test_bad_file_after_start_raises_from_every_check(auth: DaemonAuth, token_file: Path) -> None:
    secret = _secret(token_file)
    os.chmod(token_file, 0o644)
    with pytest.raises(TokenFileError) as info:
        auth.verify_bearer(secret)
    assert secret not in "".join(traceback.format_exception(info.value))


def test_hint_default_and_repr(token_file: Path) -> None:
    auth = create_daemon_auth(token_file)
    assert auth.sign_in_hint == DEFAULT_SIGN_IN_HINT
    assert create_daemon_auth(token_file, sign_in_hint="Run it.").sign_in_hint == "Run it."
    assert _secret(token_file) not in repr(auth)
    assert auth.token_file == str(token_file)
