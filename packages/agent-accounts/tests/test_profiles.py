"""discover_profiles over real directory trees: order, missing dirs, symlinks, the two env vars."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from agent_accounts.io import CONFIG_DIRS_ENV, PROFILE_ROOT_ENV, Profile, discover_profiles


def mkdirs(root: Path, *names: str) -> None:
    for name in names:
        (root / name).mkdir(parents=True)


def pairs(profiles: list[Profile]) -> list[tuple[str, str]]:
    return [(p.label, p.config_dir) for p in profiles]


def test_default_first_then_profiles_in_name_order(home_dir: Path) -> None:
    mkdirs(home_dir, ".agent", ".agent-profiles/work", ".agent-profiles/b", ".agent-profiles/.dot")
    mkdirs(home_dir, ".agent-profiles/Zed", ".agent-profiles/a")
    root = home_dir / ".agent-profiles"
    assert pairs(discover_profiles(home=home_dir, env={})) == [
        ("default", str(home_dir / ".agent")),
        ("dot", str(root / ".dot")),
        ("Zed", str(root / "Zed")),
        ("a", str(root / "a")),
        ("b", str(root / "b")),
        ("work", str(root / "work")),
    ]


def test_missing_dirs_are_left_out(home_dir: Path) -> None:
    assert discover_profiles(home=home_dir, env={}) == []
    mkdirs(home_dir, ".agent")
    assert pairs(discover_profiles(home=home_dir, env={})) == [
        ("default", str(home_dir / ".agent"))
    ]
    (home_dir / ".agent").rmdir()
    mkdirs(home_dir, ".agent-profiles/solo")
    assert [p.label for p in discover_profiles(home=home_dir, env={})] == ["solo"]


def test_a_home_that_does_not_exist_gives_nothing(tmp_path: Path) -> None:
    assert discover_profiles(home=tmp_path / "absent", env={}) == []


def test_files_are_not_profiles(home_dir: Path) -> None:
    (home_dir / ".agent").write_text("not a dir")
    mkdirs(home_dir, ".agent-profiles/real")
    (home_dir / ".agent-profiles" / "file").write_text("")
    os.mkfifo(home_dir / ".agent-profiles" / "fifo")
    assert [p.label for p in discover_profiles(home=home_dir, env={})] == ["real"]


def test_a_profile_root_that_is_a_file_gives_only_the_default(home_dir: Path) -> None:
    mkdirs(home_dir, ".agent")
    (home_dir / ".agent-profiles").write_text("")
    assert [p.label for p in discover_profiles(home=home_dir, env={})] == ["default"]


def test_symlinks_are_left_out_at_both_levels(home_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    mkdirs(elsewhere, "agent", "profiles/inner", "linked")
    (home_dir / ".agent").symlink_to(elsewhere / "agent")
    (home_dir / ".agent-profiles").symlink_to(elsewhere / "profiles")
    assert discover_profiles(home=home_dir, env={}) == []

    (home_dir / ".agent-profiles").unlink()
    mkdirs(home_dir, ".agent-profiles/real")
    (home_dir / ".agent-profiles" / "link").symlink_to(elsewhere / "linked")
    (home_dir / ".agent-profiles" / "dangling").symlink_to(elsewhere / "nowhere")
    assert [p.label for p in discover_profiles(home=home_dir, env={})] == ["real"]


def test_profile_root_env_replaces_the_scanned_dir(home_dir: Path, tmp_path: Path) -> None:
    mkdirs(home_dir, ".agent", ".agent-profiles/ignored")
    custom = tmp_path / "custom-root"
    mkdirs(custom, "two", "one")
    found = discover_profiles(home=home_dir, env={PROFILE_ROOT_ENV: str(custom)})
    assert pairs(found) == [
        ("default", str(home_dir / ".agent")),
        ("one", str(custom / "one")),
        ("two", str(custom / "two")),
    ]


def test_empty_profile_root_env_is_ignored(home_dir: Path) -> None:
    mkdirs(home_dir, ".agent-profiles/kept")
    assert [p.label for p in discover_profiles(home=home_dir, env={PROFILE_ROOT_ENV: ""})] == [
        "kept"
    ]


def test_missing_profile_root_env_dir_gives_only_the_default(
    home_dir: Path, tmp_path: Path
) -> None:
    mkdirs(home_dir, ".agent", ".agent-profiles/ignored")
    env = {PROFILE_ROOT_ENV: str(tmp_path / "absent")}
    assert [p.label for p in discover_profiles(home=home_dir, env=env)] == ["default"]


def test_config_dirs_env_replaces_the_scan_and_is_taken_as_given(
    home_dir: Path, tmp_path: Path
) -> None:
    mkdirs(home_dir, ".agent", ".agent-profiles/scanned")
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    listed = [
        str(tmp_path / "z-absent"),
        str(link),
        str(home_dir / ".agent"),
        str(tmp_path / ".dot"),
    ]
    env = {CONFIG_DIRS_ENV: os.pathsep.join(listed), PROFILE_ROOT_ENV: str(tmp_path)}
    found = discover_profiles(home=home_dir, env=env)
    # In the given order, neither checked nor resolved; the default dir keeps its label.
    assert pairs(found) == [
        ("z-absent", listed[0]),
        ("link", listed[1]),
        ("default", listed[2]),
        ("dot", listed[3]),
    ]


def test_config_dirs_env_with_one_entry_and_empty_parts(home_dir: Path, tmp_path: Path) -> None:
    one = str(tmp_path / "only")
    env = {CONFIG_DIRS_ENV: os.pathsep + one + os.pathsep}
    assert pairs(discover_profiles(home=home_dir, env=env)) == [("only", one)]


def test_empty_config_dirs_env_falls_back_to_the_scan(home_dir: Path) -> None:
    mkdirs(home_dir, ".agent")
    assert [p.label for p in discover_profiles(home=home_dir, env={CONFIG_DIRS_ENV: ""})] == [
        "default"
    ]


def test_defaults_are_the_os_home_and_the_process_environment(
    home_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mkdirs(home_dir, ".agent", ".agent-profiles/p")
    monkeypatch.setenv("HOME", str(home_dir))
    monkeypatch.delenv(CONFIG_DIRS_ENV, raising=False)
    monkeypatch.delenv(PROFILE_ROOT_ENV, raising=False)
    assert [(p.label, p.config_dir) for p in discover_profiles()][:1] == [
        ("default", str(home_dir / ".agent"))
    ]
    assert [p.label for p in discover_profiles()] == ["default", "p"]
    monkeypatch.setenv(CONFIG_DIRS_ENV, str(tmp_path / "from-env"))
    assert [p.label for p in discover_profiles()] == ["from-env"]


def test_profile_is_a_frozen_keyword_only_record() -> None:
    profile = Profile(label="work", config_dir="/x/work")
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.label = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Profile("work", "/x/work")  # type: ignore[call-arg]
    assert dataclasses.asdict(profile) == {"label": "work", "config_dir": "/x/work"}
