"""`units install [--dry-run] [--force]`, as both packages that ship systemd units run it.

agent-accounts (`account-cli units`) and local-daemon (`local-daemon units`) install their shipped
units the same way; the tests are written once here, and each package's own `test_units.py`
subclasses `UnitsInstallTests` with a `UnitsCli` naming its program, units and exit codes, so a
package's suite still fails on its own when its units or its copy of `systemd/` drift.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import ClassVar

import pytest

__all__ = ["SOURCE", "UnitsCli", "UnitsInstallTests"]

# The source tree's systemd/, of which each package's units/ is a copy.
SOURCE = Path(__file__).resolve().parents[1] / "systemd"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitsCli:
    """One package's `units` command: what it ships and how it answers."""

    prog: str  # the program name that leads its stderr lines
    package: str  # the import name whose `units/` holds the shipped copies
    main: Callable[[Sequence[str]], object]  # the CLI's entry point (raises SystemExit)
    names: tuple[str, ...]  # every unit it ships
    enable: str  # the unit `systemctl --user enable --now` names
    install_hint: str  # how the note says to get the program into ~/.local/bin
    changed: str  # a unit a test changes by hand ...
    changed_text: bytes  # ... to this
    linked: str  # a unit a test replaces with a symlink
    refused_exit: int  # the exit when a unit differs or is not a regular file
    action: str  # argparse's name for the action argument
    install_notes: tuple[str, ...] = ()  # more lines the install prints


class UnitsInstallTests:
    """The tests; a subclass named `Test...` sets `cli`."""

    cli: ClassVar[UnitsCli]

    def shipped(self, name: str) -> bytes:
        return (files(self.cli.package) / "units" / name).read_bytes()

    def run(self, *args: str) -> int:
        with pytest.raises(SystemExit) as exited:
            self.cli.main(["units", *args])
        assert isinstance(exited.value.code, int)
        return exited.value.code

    @staticmethod
    def unit_dir(home: Path) -> Path:
        return home / ".config" / "systemd" / "user"

    @pytest.fixture
    def home(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        home = tmp_path / "home"
        home.mkdir()
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
        return home

    def test_the_shipped_units_are_the_source_trees_systemd_units(self) -> None:
        # Edit systemd/, then copy: cp systemd/<unit> packages/<dist>/src/<package>/units/
        for name in self.cli.names:
            assert self.shipped(name) == (SOURCE / name).read_bytes(), f"copy systemd/{name} again"

    def test_install_writes_every_unit_0644_and_says_how_to_enable(
        self, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        old = os.umask(0o077)  # the units are read by others' tools: 0644 whatever the umask
        try:
            assert self.run("install") == 0
        finally:
            os.umask(old)
        out, err = capsys.readouterr()
        for name in self.cli.names:
            path = self.unit_dir(home) / name
            assert path.read_bytes() == self.shipped(name)
            assert stat.S_IMODE(path.stat().st_mode) == 0o644
            assert f"wrote {path}\n" in out
        assert "  systemctl --user daemon-reload\n" in out
        assert f"  systemctl --user enable --now {self.cli.enable}\n" in out
        for note in self.cli.install_notes:
            assert note in out
        # no temp file left
        assert sorted(p.name for p in self.unit_dir(home).iterdir()) == sorted(self.cli.names)
        # No ~/.local/bin/<prog> in this home: the note says so and how to get it.
        assert f"the service runs {home}/.local/bin/{self.cli.prog}, which is not there" in err
        assert self.cli.install_hint in err

    def test_dry_run_writes_nothing(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        assert self.run("install", "--dry-run") == 0
        out, _ = capsys.readouterr()
        assert not (home / ".config").exists()
        for name in self.cli.names:
            assert f"would write {self.unit_dir(home) / name}\n" in out
        assert f"systemctl --user enable --now {self.cli.enable}" in out

    def test_again_is_unchanged_and_no_note_with_the_command_in_place(
        self, home: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        command = home / ".local" / "bin" / self.cli.prog
        command.parent.mkdir(parents=True)
        command.write_text("#!/bin/sh\n", encoding="utf-8")
        command.chmod(0o755)
        assert self.run("install") == 0
        capsys.readouterr()
        units = self.unit_dir(home)
        before = {name: (units / name).stat().st_ino for name in self.cli.names}
        assert self.run("install") == 0
        out, err = capsys.readouterr()
        assert err == ""
        for name in self.cli.names:
            assert f"unchanged {units / name}\n" in out
            assert (units / name).stat().st_ino == before[name]  # not rewritten

    @pytest.mark.parametrize("dry_run", [False, True])
    def test_a_changed_unit_is_named_and_nothing_is_written(
        self, home: Path, capsys: pytest.CaptureFixture[str], dry_run: bool
    ) -> None:
        changed = self.unit_dir(home) / self.cli.changed
        changed.parent.mkdir(parents=True)
        changed.write_bytes(self.cli.changed_text)
        assert self.run("install", *(["--dry-run"] if dry_run else [])) == self.cli.refused_exit
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            f"{self.cli.prog}: {changed} differs from the unit this version ships; nothing "
            "written (--force replaces it; keep local changes in a drop-in: "
            f"systemctl --user edit {self.cli.changed})\n"
        )
        assert changed.read_bytes() == self.cli.changed_text
        assert [p.name for p in changed.parent.iterdir()] == [self.cli.changed]

    def test_force_replaces_a_changed_unit_and_a_symlink(
        self, home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        target = self.unit_dir(home)
        target.mkdir(parents=True)
        (target / self.cli.changed).write_bytes(b"mine\n")
        elsewhere = tmp_path / "elsewhere.service"
        elsewhere.write_bytes(self.shipped(self.cli.linked))
        (target / self.cli.linked).symlink_to(elsewhere)
        assert self.run("install") == self.cli.refused_exit
        _, err = capsys.readouterr()
        assert f"{target / self.cli.linked} is not a regular file; nothing written" in err
        assert self.run("install", "--force") == 0
        out, _ = capsys.readouterr()
        for name in self.cli.names:
            verb = "replaced" if name in (self.cli.changed, self.cli.linked) else "wrote"
            assert f"{verb} {target / name}\n" in out
            assert (target / name).read_bytes() == self.shipped(name)
        assert not (target / self.cli.linked).is_symlink()
        assert elsewhere.read_bytes() == self.shipped(self.cli.linked)  # the link's target kept

    def test_xdg_config_home_is_honoured_when_absolute(
        self, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
        assert self.run("install") == 0
        assert (tmp_path / "xdg" / "systemd" / "user" / self.cli.enable).is_file()
        monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # the XDG spec: ignore it
        assert self.run("install") == 0
        assert (self.unit_dir(home) / self.cli.enable).is_file()

    def test_an_unwritable_unit_dir_is_one_line(
        self,
        home: Path,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("", encoding="utf-8")
        monkeypatch.setenv("XDG_CONFIG_HOME", str(blocker))
        assert self.run("install") == self.cli.refused_exit
        out, err = capsys.readouterr()
        assert out == ""
        assert err == (
            f"{self.cli.prog}: cannot write the units to {blocker}/systemd/user: Not a directory\n"
        )

    @pytest.mark.parametrize(
        ("args", "problem"),
        [
            ([], "the following arguments are required: {action}"),
            (["remove"], "argument {action}: invalid choice: 'remove'"),
            (["install", "--force", "--force"], "argument --force: given twice"),
        ],
    )
    def test_bad_invocations_are_usage_errors(
        self, home: Path, capsys: pytest.CaptureFixture[str], args: list[str], problem: str
    ) -> None:
        assert self.run(*args) == 64
        _, err = capsys.readouterr()
        assert err.startswith(f"{self.cli.prog}: {problem.format(action=self.cli.action)}")
        assert f"usage: {self.cli.prog} units" in err
        assert not (home / ".config").exists()
