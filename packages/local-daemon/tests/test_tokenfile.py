from __future__ import annotations

import base64
import os
import stat
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from local_daemon import (
    TokenFileError,
    create_daemon_auth,
    ensure_token_file,
    rotate_token_file,
)

SPARE_UID = 65534


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.write_bytes(data)
    os.chmod(path, mode)


def _good_text() -> bytes:
    return base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=") + b"\n"


class TestEnsure:
    def test_creates_a_private_32_byte_base64url_secret(self, tmp_path: Path) -> None:
        path = tmp_path / "sub" / "token"
        assert ensure_token_file(path) == path
        st = path.stat()
        assert stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        text = path.read_text().strip()
        assert len(base64.urlsafe_b64decode(text + "=")) == 32
        assert create_daemon_auth(path).verify_bearer(text) is not None

    def test_keeps_an_existing_file(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        before = path.read_bytes()
        ensure_token_file(path)
        assert path.read_bytes() == before

    def test_refuses_an_existing_bad_file(self, tmp_path: Path) -> None:
        path = tmp_path / "token"
        _write(path, _good_text(), 0o644)
        with pytest.raises(TokenFileError) as info:
            ensure_token_file(path)
        assert info.value.problem == "mode"

    def test_secrets_differ(self, tmp_path: Path) -> None:
        a = ensure_token_file(tmp_path / "a").read_text()
        b = ensure_token_file(tmp_path / "b").read_text()
        assert a != b


class TestRotate:
    def test_replaces_the_secret_atomically_and_privately(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        before_text, before_ino = path.read_text(), path.stat().st_ino
        rotate_token_file(path)
        assert path.read_text() != before_text
        assert path.stat().st_ino != before_ino
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert sorted(p.name for p in tmp_path.iterdir()) == ["token"]

    def test_creates_when_missing(self, tmp_path: Path) -> None:
        path = rotate_token_file(tmp_path / "token")
        assert create_daemon_auth(path).verify_bearer(path.read_text().strip()) is not None


def _symlink(path: Path) -> None:
    target = path.with_name("real")
    _write(target, _good_text())
    path.symlink_to(target)


def _fifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def _directory(path: Path) -> None:
    path.mkdir(mode=0o700)


def _other_owner(path: Path) -> None:
    _write(path, _good_text())
    os.chown(path, SPARE_UID, SPARE_UID)


REFUSALS: list[tuple[str, Callable[[Path], None], str]] = [
    ("missing", lambda p: None, "missing"),
    ("symlink", _symlink, "symlink"),
    ("fifo", _fifo, "not_regular"),
    ("directory", _directory, "not_regular"),
    ("other owner", _other_owner, "owner"),
    ("group readable", lambda p: _write(p, _good_text(), 0o640), "mode"),
    ("other readable", lambda p: _write(p, _good_text(), 0o604), "mode"),
    ("group writable", lambda p: _write(p, _good_text(), 0o620), "mode"),
    ("empty", lambda p: _write(p, b""), "empty"),
    ("only a newline", lambda p: _write(p, b"\n"), "empty"),
    ("31 bytes", lambda p: _write(p, base64.urlsafe_b64encode(b"x" * 31)), "too_short"),
    ("standard base64 alphabet", lambda p: _write(p, b"+/" * 30), "not_base64url"),
    ("spaces inside", lambda p: _write(p, b"abcd efgh" * 8), "not_base64url"),
    ("not ascii", lambda p: _write(p, "é".encode() * 40), "not_base64url"),
    ("bad padding", lambda p: _write(p, b"A" * 45 + b"="), "not_base64url"),
    ("huge", lambda p: _write(p, b"A" * 5000), "too_large"),
]


@pytest.mark.parametrize(
    ("make", "problem"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
def test_refusal_rows(tmp_path: Path, make: Callable[[Path], None], problem: str) -> None:
    path = tmp_path / "token"
    make(path)
    # The gate checks the file at once; `ensure` checks a file that is there (a missing one it
    # creates).
    with pytest.raises(TokenFileError) as info:
        create_daemon_auth(path)
    errors = [info.value]
    if problem != "missing":
        with pytest.raises(TokenFileError) as again:
            ensure_token_file(path)
        errors.append(again.value)
    for error in errors:
        assert error.problem == problem
        assert str(path) in str(error)
        # Nothing chained: a UnicodeDecodeError would keep the file's bytes (the secret).
        assert error.__context__ is None or isinstance(error.__context__, OSError)


def test_padded_base64url_and_longer_secrets_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "token"
    secret = base64.urlsafe_b64encode(os.urandom(48))
    _write(path, secret + b"\r\n")
    assert create_daemon_auth(path).verify_bearer(secret.decode()) is not None


def test_secret_never_in_errors_or_repr(tmp_path: Path) -> None:
    path = ensure_token_file(tmp_path / "token")
    secret = path.read_text().strip()
    auth = create_daemon_auth(path)
    assert secret not in repr(auth) + repr(vars(auth) if hasattr(auth, "__dict__") else "")
    os.chmod(path, 0o644)
    with pytest.raises(TokenFileError) as info:
        ensure_token_file(path)
    assert secret not in "".join(traceback.format_exception(info.value))


def test_a_secret_with_one_non_ascii_byte_is_refused_without_chaining_it(tmp_path: Path) -> None:
    path = tmp_path / "token"
    secret = base64.urlsafe_b64encode(os.urandom(40))
    _write(path, secret + b"\xe9")
    for read in (ensure_token_file, create_daemon_auth):
        with pytest.raises(TokenFileError) as info:
            read(path)
        assert info.value.problem == "not_base64url"
        assert info.value.__context__ is None
        assert secret.decode() not in "".join(traceback.format_exception(info.value))


class TestReader:
    """The gate re-checks the file whenever inode, size, mtime, ctime, mode or owner change."""

    def test_new_inode(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        first = path.read_text().strip()
        rotate_token_file(path)
        assert auth.verify_bearer(first) is None
        assert auth.verify_bearer(path.read_text().strip()) is not None

    def test_size(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        with path.open("ab") as fh:
            fh.write(b"!")
        with pytest.raises(TokenFileError) as info:
            auth.check()
        assert info.value.problem == "not_base64url"

    def test_mtime_same_size(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        first = path.read_text().strip()
        st = path.stat()
        path.write_bytes(_good_text())
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert auth.verify_bearer(first) is None
        assert auth.verify_bearer(path.read_text().strip()) is not None

    def test_mode_and_back(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        os.chmod(path, 0o640)
        with pytest.raises(TokenFileError) as info:
            auth.check()
        assert info.value.problem == "mode"
        # The refusal holds while nothing changes, then clears when the file is fixed.
        with pytest.raises(TokenFileError):
            auth.check()
        os.chmod(path, 0o600)
        assert auth.verify_bearer(path.read_text().strip()) is not None

    def test_owner(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        os.chown(path, SPARE_UID, -1)
        with pytest.raises(TokenFileError) as info:
            auth.check()
        assert info.value.problem == "owner"
        os.chown(path, os.geteuid(), -1)
        auth.check()

    def test_swapped_for_a_symlink(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        other = ensure_token_file(tmp_path / "other")
        path.unlink()
        path.symlink_to(other)
        with pytest.raises(TokenFileError) as info:
            auth.check()
        assert info.value.problem == "symlink"

    def test_deleted(self, tmp_path: Path) -> None:
        path = ensure_token_file(tmp_path / "token")
        auth = create_daemon_auth(path)
        path.unlink()
        with pytest.raises(TokenFileError) as info:
            auth.check()
        assert info.value.problem == "missing"


class TestTokenCli:
    """`local-daemon token ...` through the command line's own `main`."""

    @staticmethod
    def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
        from local_daemon.cli import main

        with pytest.raises(SystemExit) as caught:
            main(["token", *args])
        out, err = capsys.readouterr()
        assert isinstance(caught.value.code, int)
        return caught.value.code, out, err

    def test_ensure_rotate_login_code(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "token"
        code, out, err = self.run(capsys, "ensure", str(path))
        assert code == 0, err
        assert out.strip() == str(path)
        secret = path.read_text().strip()
        assert secret not in out + err
        code, out, _ = self.run(capsys, "login-code", str(path))
        assert code == 0
        login = out.strip()
        assert create_daemon_auth(path, started_at=0).spend_login_code(login)
        code, out, _ = self.run(capsys, "login-code", str(path), "--url", "https://box.test:8443/")
        assert out.startswith("https://box.test:8443/auth/login?code=v1.")
        assert self.run(capsys, "login-code", str(path), "--url", "http://x")[0] == 64
        code, _, _ = self.run(capsys, "rotate", str(path))
        assert code == 0
        assert path.read_text().strip() != secret
        assert not create_daemon_auth(path, started_at=0).spend_login_code(login)

    def test_bad_file_exits_78_with_the_problem(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "token"
        _write(path, _good_text(), 0o644)
        code, out, err = self.run(capsys, "login-code", str(path))
        assert code == 78  # EX_CONFIG
        assert "problem: mode" in err
        assert path.read_text().strip() not in out + err
