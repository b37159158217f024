"""`local-daemon units install [--dry-run] [--force]`: the shipped units into the user's unit dir.

(That the shipped copies equal the repository's `systemd/` and that systemd-analyze verifies what
this command writes: tests-integration/test_units_install.py.)
"""

from __future__ import annotations

import os
import stat
from importlib.resources import files
from pathlib import Path

import pytest

from local_daemon.cli import main

NAMES = ("local-daemon.socket", "local-daemon.service")


# The source tree's systemd/, of which the package's units/ is a copy.
SOURCE = Path(__file__).resolve().parents[3] / "systemd"


def test_the_shipped_units_are_the_source_trees_systemd_units() -> None:
    # Edit systemd/, then copy: cp systemd/<unit> packages/local-daemon/src/local_daemon/units/
    for name in NAMES:
        assert shipped(name) == (SOURCE / name).read_bytes(), f"copy systemd/{name} again"


def shipped(name: str) -> bytes:
    return (files("local_daemon") / "units" / name).read_bytes()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def run(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        main(["units", *args])
    assert isinstance(exited.value.code, int)
    return exited.value.code


def unit_dir(home: Path) -> Path:
    return home / ".config" / "systemd" / "user"


def test_install_writes_the_two_units_0644_and_says_how_to_enable(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = os.umask(0o077)  # the units are read by others' tools: 0644 whatever the umask
    try:
        assert run("install") == 0
    finally:
        os.umask(old)
    out, err = capsys.readouterr()
    for name in NAMES:
        path = unit_dir(home) / name
        assert path.read_bytes() == shipped(name)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert f"wrote {path}\n" in out
    assert "  systemctl --user daemon-reload\n" in out
    assert "  systemctl --user enable --now local-daemon.socket\n" in out
    assert "LOCAL_DAEMON_APP=MODULE:ATTR" in out
    assert sorted(p.name for p in unit_dir(home).iterdir()) == sorted(NAMES)  # no temp left
    # No ~/.local/bin/local-daemon in this home: the note says so and how to get it.
    assert f"the service runs {home}/.local/bin/local-daemon, which is not there" in err
    assert "uv tool install local-daemon --with <your-product>" in err


def test_dry_run_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("install", "--dry-run") == 0
    out, _ = capsys.readouterr()
    assert not (home / ".config").exists()
    for name in NAMES:
        assert f"would write {unit_dir(home) / name}\n" in out
    assert "systemctl --user enable --now local-daemon.socket" in out


def test_again_is_unchanged_and_no_note_with_the_command_in_place(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = home / ".local" / "bin" / "local-daemon"
    command.parent.mkdir(parents=True)
    command.write_text("#!/bin/sh\n", encoding="utf-8")
    command.chmod(0o755)
    assert run("install") == 0
    capsys.readouterr()
    before = {name: (unit_dir(home) / name).stat().st_ino for name in NAMES}
    assert run("install") == 0
    out, err = capsys.readouterr()
    assert err == ""
    for name in NAMES:
        assert f"unchanged {unit_dir(home) / name}\n" in out
        assert (unit_dir(home) / name).stat().st_ino == before[name]  # not rewritten


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_changed_unit_is_named_and_nothing_is_written(
    home: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
) -> None:
    changed = unit_dir(home) / "local-daemon.socket"
    changed.parent.mkdir(parents=True)
    changed.write_bytes(b"[Socket]\nListenStream=127.0.0.1:9000\n")
    assert run("install", *(["--dry-run"] if dry_run else [])) == 78
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"local-daemon: {changed} differs from the unit this version ships; nothing written "
        "(--force replaces it; keep local changes in a drop-in: "
        "systemctl --user edit local-daemon.socket)\n"
    )
    assert changed.read_bytes() == b"[Socket]\nListenStream=127.0.0.1:9000\n"
    assert [p.name for p in changed.parent.iterdir()] == ["local-daemon.socket"]


def test_force_replaces_a_changed_unit_and_a_symlink(
    home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = unit_dir(home)
    target.mkdir(parents=True)
    (target / "local-daemon.socket").write_bytes(b"mine\n")
    elsewhere = tmp_path / "elsewhere.service"
    elsewhere.write_bytes(shipped("local-daemon.service"))
    (target / "local-daemon.service").symlink_to(elsewhere)
    assert run("install") == 78
    _, err = capsys.readouterr()
    assert f"{target / 'local-daemon.service'} is not a regular file; nothing written" in err
    assert run("install", "--force") == 0
    out, _ = capsys.readouterr()
    assert f"replaced {target / 'local-daemon.socket'}\n" in out
    assert f"replaced {target / 'local-daemon.service'}\n" in out
    assert not (target / "local-daemon.service").is_symlink()
    assert elsewhere.read_bytes() == shipped("local-daemon.service")  # the link's target kept
    for name in NAMES:
        assert (target / name).read_bytes() == shipped(name)


def test_xdg_config_home_is_honoured_when_absolute(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert run("install") == 0
    assert (tmp_path / "xdg" / "systemd" / "user" / "local-daemon.socket").is_file()
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # the XDG spec: ignore it
    assert run("install") == 0
    assert (unit_dir(home) / "local-daemon.socket").is_file()


def test_an_unwritable_unit_dir_is_one_line_exit_78(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))
    assert run("install") == 78
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err == f"local-daemon: cannot write the units to {blocker}/systemd/user: Not a directory\n"
    )


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([], "the following arguments are required: ACTION"),
        (["remove"], "argument ACTION: invalid choice: 'remove'"),
        (["install", "--force", "--force"], "argument --force: given twice"),
    ],
)
def test_bad_invocations_are_usage_errors(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], problem: str
) -> None:
    assert run(*args) == 64
    _, err = capsys.readouterr()
    assert err.startswith(f"local-daemon: {problem}")
    assert "usage: local-daemon units" in err
    assert not (home / ".config").exists()
