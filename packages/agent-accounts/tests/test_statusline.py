"""`account-cli status --statusline`: what the hot path loads, and that its lean path prints what
the public API (`discover_profiles`, `read_usage`, `redact_secrets`) would.

The status line reads through `profile_dirs` and `newest_reading`, the dataclass-free cores of
`discover_profiles` and `read_usage`. The table below runs both over the same homes with the
clock fixed and asserts byte-identical output: missing, corrupt, oversized, non-regular and stale
readings, fallbacks past a reading that lacks a window, labels the line format cannot carry and
labels that need redaction, and every way of naming the current account.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from accounts_cli_support import HEAVY, HEAVY_TOP_LEVEL
from accounts_support import CANARY, add_profile, make_profile
from agent_accounts import redact_secrets
from agent_accounts.cli import main
from agent_accounts.io import discover_profiles, read_usage

NOW = 1_800_000_000.0
ENV_NAMES = ("AGENT_CONFIG_DIR", "AGENT_CONFIG_DIRS", "AGENT_PROFILE_ROOT")

# ---- the reference: the status line as the public API computes it -----------------------------


def _floor(value: object) -> str:
    import math

    return str(math.floor(value)) if isinstance(value, int | float) else ""


def reference_statusline() -> str:
    """The status line built from the public API alone (the implementation before the lean path)."""
    both = ("five_hour", "seven_day")

    def fields(limits: Any) -> tuple[str, str, str, str]:
        five, week = limits["five_hour"], limits["seven_day"]
        return (
            _floor(five["used_percentage"]),
            _floor(week["used_percentage"]),
            _floor(five.get("resets_at")),
            _floor(week.get("resets_at")),
        )

    current = os.environ.get("AGENT_CONFIG_DIR") or os.path.expanduser("~/.agent")
    lines: list[str] = []
    try:
        mine = read_usage(current, windows=both)
    except Exception:
        mine = None
    if mine is None:
        lines.append("unknown|unknown|||||||")
    else:
        five, week, five_reset, week_reset = fields(mine.reading["rate_limits"])
        lines.append(f"{five}|{week}|{five_reset}|{week_reset}|||||{mine.age_seconds}")
    here = os.path.realpath(current)
    for profile in discover_profiles():
        if "|" in profile.label or not profile.label.isprintable():
            continue
        try:
            same = os.path.realpath(profile.config_dir) == here
            usage = None if same else read_usage(profile.config_dir, windows=both)
        except Exception:
            usage = None
        if usage is not None:
            five, week, _, _ = fields(usage.reading["rate_limits"])
            label = redact_secrets(profile.label)
            lines.append(f"other|{label}|{five}|{week}|{usage.age_seconds}|")
    return "\n".join(lines) + "\n"


# ---- homes -------------------------------------------------------------------------------------


def profile(home: Path, name: str) -> Path:
    return add_profile(home, name, now=NOW)


def sessions(config: Path) -> Path:
    path = config / "status-cache" / "sessions"
    path.mkdir(parents=True, exist_ok=True)
    return path


def plant(config: Path, name: str, doc: object, *, raw: bytes | None = None) -> Path:
    path = sessions(config) / name
    path.write_bytes(raw if raw is not None else json.dumps(doc).encode())
    return path


def reading(age: float, *, windows: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    limits = {
        "five_hour": {"used_percentage": 23.9, "resets_at": NOW + 3600.7},
        "seven_day": {"used_percentage": 41, "resets_at": NOW + 86400},
    }
    return {
        "session_id": "s",
        "written_at": NOW - age,
        "rate_limits": limits if windows is None else windows,
        **extra,
    }


Setup = Callable[[Path, pytest.MonkeyPatch], None]


def windows(five: object = None, week: object = None, **more: object) -> dict[str, Any]:
    """Rate limits with `five_hour` and `seven_day` at these percentages (None leaves one out)."""
    named = {"five_hour": five, "seven_day": week, **more}
    return {name: {"used_percentage": used} for name, used in named.items() if used is not None}


def _default_and_two(home: Path, mp: pytest.MonkeyPatch) -> None:
    plant(profile(home, ".agent"), "a.json", reading(30))
    limits = windows(0, 100)
    limits["seven_day"]["resets_at"] = NOW - 0.5
    plant(profile(home, "work"), "w.json", reading(5, windows=limits))
    plant(profile(home, "quiet"), "q.json", reading(1, windows=windows(1)))  # lacks seven_day


def _no_home(home: Path, mp: pytest.MonkeyPatch) -> None:
    pass


def _no_sessions_dir(home: Path, mp: pytest.MonkeyPatch) -> None:
    profile(home, ".agent")
    profile(home, "work")


def _corrupt_files(home: Path, mp: pytest.MonkeyPatch) -> None:
    default = profile(home, ".agent")
    plant(default, "ok.json", reading(100))
    for index, raw in enumerate(
        [b"\xff{", b"{", b"", b"[]", b"null", b"[" * 100_000, b'{"session_id": 1}', b"NaN"]
    ):
        plant(default, f"z{index}.json", None, raw=raw)
    plant(default, "nan.json", None, raw=json.dumps(reading(0)).replace("41", "NaN").encode())
    plant(default, "big.json", None, raw=b" " * (256 * 1024) + json.dumps(reading(0)).encode())
    plant(default, "pct.json", reading(0, windows=windows(101, 1)))
    plant(default, "bool.json", reading(0, windows=windows(True, 1)))
    plant(default, "name.json", reading(0, windows=windows(1, 1, Five=1)))
    plant(default, "empty.json", reading(0, windows={}))
    plant(default, "notjson.txt", reading(0))
    work = profile(home, "work")
    plant(work, "only.json", None, raw=b"{not json")


def _stale_and_fallback(home: Path, mp: pytest.MonkeyPatch) -> None:
    default = profile(home, ".agent")
    plant(default, "old.json", reading(7200))
    plant(default, "newer.json", reading(10, windows=windows(99)))  # lacks seven_day
    work = profile(home, "work")
    plant(work, "b.json", reading(50, windows=windows(1.5, 2.5)))
    plant(work, "a.json", reading(50))  # a tie with b.json: the first name in sorted order wins
    future = profile(home, "future")
    # Dated ahead of now, its file too (a clock stepped back since): counted as written now.
    os.utime(plant(future, "f.json", reading(-500)), (NOW + 500, NOW + 500))
    ancient = profile(home, "ancient")
    plant(ancient, "x.json", {**reading(0), "written_at": -1e15})


def _non_regular_files(home: Path, mp: pytest.MonkeyPatch) -> None:
    default = profile(home, ".agent")
    target = plant(profile(home, "donor"), "d.json", reading(40))
    directory = sessions(default)
    os.mkfifo(directory / "fifo.json")
    (directory / "dir.json").mkdir()
    (directory / "link.json").symlink_to(target)
    (directory / "dangling.json").symlink_to(home / "nowhere")
    os.link(target, directory / "hard.json")  # a reading may be hard-linked (no strict gate)
    loose = plant(profile(home, "loose"), "l.json", reading(60))
    loose.chmod(0o666)  # nor owner-only
    odd = profile(home, "odd")
    (odd / "status-cache").write_text("not a dir")
    looped = profile(home, "looped")
    (looped / "status-cache").symlink_to(looped / "status-cache")
    (home / ".agent-profiles" / "linked").symlink_to(default)  # a symlinked profile is no profile


def _labels(home: Path, mp: pytest.MonkeyPatch) -> None:
    plant(profile(home, ".agent"), "a.json", reading(1))
    for name in ("pipe|name", "tab\tname", f"sk-ant-oat01-{CANARY}", "x" * 40, "token=abc", "ok"):
        plant(profile(home, name), "r.json", reading(2, session_id=f"token={CANARY}"))


def _config_dir_is_a_profile(home: Path, mp: pytest.MonkeyPatch) -> None:
    plant(profile(home, ".agent"), "a.json", reading(1))
    work = profile(home, "work")
    plant(work, "w.json", reading(2))
    plant(profile(home, "other"), "o.json", reading(3))
    mp.setenv("AGENT_CONFIG_DIR", str(work))


def _config_dir_through_a_symlink(home: Path, mp: pytest.MonkeyPatch) -> None:
    _config_dir_is_a_profile(home, mp)
    (home / "alias").symlink_to(home / ".agent-profiles" / "work")
    mp.setenv("AGENT_CONFIG_DIR", str(home / "alias"))


def _config_dir_is_a_file(home: Path, mp: pytest.MonkeyPatch) -> None:
    plant(profile(home, "work"), "w.json", reading(2))
    (home / "file").write_text("")
    mp.setenv("AGENT_CONFIG_DIR", str(home / "file"))


def _config_dirs_listed(home: Path, mp: pytest.MonkeyPatch) -> None:
    one = profile(home, "one")
    plant(one, "r.json", reading(3))
    two = profile(home, "two")
    plant(two, "r.json", reading(4))
    mp.setenv("AGENT_CONFIG_DIRS", os.pathsep.join([str(two), "", str(home / "gone"), str(one)]))


def _profile_root(home: Path, mp: pytest.MonkeyPatch) -> None:
    root = home / "elsewhere"
    config, _ = make_profile(root, "far", now=NOW)
    plant(Path(config.config_dir), "r.json", reading(9))
    plant(profile(home, "hidden"), "r.json", reading(9))  # under the replaced root
    mp.setenv("AGENT_PROFILE_ROOT", str(root))


def _profile_root_is_a_file(home: Path, mp: pytest.MonkeyPatch) -> None:
    plant(profile(home, ".agent"), "a.json", reading(1))
    (home / ".agent-profiles").write_text("")


def _listing_fails(home: Path, mp: pytest.MonkeyPatch) -> None:
    """A sessions dir that cannot be listed (EACCES even for root) hides only its own profile."""
    plant(profile(home, ".agent"), "a.json", reading(1))
    broken = profile(home, "broken")
    plant(broken, "b.json", reading(2))
    plant(profile(home, "fine"), "f.json", reading(3))
    real = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        if str(path).startswith(str(broken)):
            raise PermissionError(errno.EACCES, f"denied token={CANARY}", str(path))
        return real(path)

    mp.setattr(os, "listdir", listdir)


def _reading_vanishes(home: Path, mp: pytest.MonkeyPatch) -> None:
    """A file listed, then removed by its writer before the open: skipped, not an error."""
    default = profile(home, ".agent")
    plant(default, "a.json", reading(1))
    plant(default, "b.json", reading(0))
    real = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        return [*real(path), "gone.json"]

    mp.setattr(os, "listdir", listdir)


CASES: dict[str, Setup] = {
    "default-and-two-others": _default_and_two,
    "no-profiles-at-all": _no_home,
    "no-sessions-dir": _no_sessions_dir,
    "corrupt-and-invalid-files": _corrupt_files,
    "stale-fallback-ties-future-ancient": _stale_and_fallback,
    "non-regular-files-and-dirs": _non_regular_files,
    "labels-left-out-or-redacted": _labels,
    "config-dir-is-a-profile": _config_dir_is_a_profile,
    "config-dir-through-a-symlink": _config_dir_through_a_symlink,
    "config-dir-is-a-file": _config_dir_is_a_file,
    "config-dirs-listed": _config_dirs_listed,
    "profile-root-env": _profile_root,
    "profile-root-is-a-file": _profile_root_is_a_file,
    "listing-fails": _listing_fails,
    "reading-vanishes": _reading_vanishes,
}

# What each case prints, so the comparison is never between two equally wrong answers.
UNKNOWN = "unknown|unknown|||||||\n"
MINE = "23|41|1800003600|1800086400|||||"  # the current account's line, less its age
EXPECTED = {
    "default-and-two-others": f"{MINE}30\nother|work|0|100|5|\n",
    "no-profiles-at-all": UNKNOWN,
    "no-sessions-dir": UNKNOWN,
    "corrupt-and-invalid-files": f"{MINE}100\n",
    "stale-fallback-ties-future-ancient": (
        f"{MINE}7200\nother|ancient|23|41|1000001800000000|\nother|future|23|41|0|\n"
        "other|work|23|41|50|\n"
    ),
    "non-regular-files-and-dirs": f"{MINE}40\nother|donor|23|41|40|\nother|loose|23|41|60|\n",
    "labels-left-out-or-redacted": (
        f"{MINE}1\nother|ok|23|41|2|\nother|[REDACTED]|23|41|2|\n"
        "other|token=[REDACTED]|23|41|2|\nother|[REDACTED]|23|41|2|\n"
    ),
    "config-dir-is-a-profile": f"{MINE}2\nother|default|23|41|1|\nother|other|23|41|3|\n",
    "config-dir-through-a-symlink": f"{MINE}2\nother|default|23|41|1|\nother|other|23|41|3|\n",
    "config-dir-is-a-file": f"{UNKNOWN}other|work|23|41|2|\n",
    "config-dirs-listed": f"{UNKNOWN}other|two|23|41|4|\nother|one|23|41|3|\n",
    "profile-root-env": f"{UNKNOWN}other|far|23|41|9|\n",
    "profile-root-is-a-file": f"{MINE}1\n",
    "listing-fails": f"{MINE}1\nother|fine|23|41|3|\n",
    "reading-vanishes": f"{MINE}0\n",
}


@pytest.fixture
def fixed_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(time, "time", lambda: NOW)
    return home


def run_statusline(capsys: pytest.CaptureFixture[str]) -> str:
    """Run `account-cli status --statusline` in this process (the clock and listdir patched)."""
    with pytest.raises(SystemExit) as done:
        main(["status", "--statusline"])
    out, err = capsys.readouterr()
    assert (done.value.code, err) == (0, "")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_statusline_prints_what_the_public_api_computes(
    case: str,
    fixed_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    CASES[case](fixed_home, monkeypatch)
    fast = run_statusline(capsys)
    assert fast == reference_statusline()
    assert fast == EXPECTED[case]
    assert CANARY not in fast


def test_every_case_has_an_expected_answer() -> None:
    assert set(EXPECTED) == set(CASES)


# ---- what the hot path loads -------------------------------------------------------------------

PROBE = textwrap.dedent(
    """
    import sys
    # PRELOAD
    sys.argv = ["account-cli", "status", "--statusline"]
    from agent_accounts.cli import main
    try:
        main()
    except SystemExit as done:
        code = done.code
    loaded = sorted(sys.modules)  # before the probe's own json import
    import json
    sys.stderr.write(json.dumps({"code": code, "modules": loaded}))
    """
)

# The library's own modules off its path: exactly these of the library's modules; a new one on the hot path must be added here knowingly.
OWN_MODULES = {
    "agent_accounts",
    "agent_accounts._labels",
    "agent_accounts._numbers",
    "agent_accounts._usage",
    "agent_accounts.cli",
    "agent_accounts.cli._exits",
    "agent_accounts.cli._output",
    "agent_accounts.cli._parse",
    "agent_accounts.cli._status",
    "agent_accounts.cli._statusline",
    "agent_accounts.io",
    "agent_accounts.io._discovery",
    "agent_accounts.io._gate",
    "agent_accounts.io._readings",
}


def _probe(home: Path, preload: str = "") -> tuple[str, set[str]]:
    # No coverage start-up hook (it would load typing itself) and no inherited AGENT_ variables.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "COV", "PYTHON"))}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("# PRELOAD", preload)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result = json.loads(done.stderr)
    assert result["code"] == 0
    return done.stdout, set(result["modules"])


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY_TOP_LEVEL or m in HEAVY}


def _five_profiles(home: Path) -> None:
    for name in (".agent", "a", "b", "c", "d"):
        plant(profile(home, name), "usage-poll.json", reading(30, session_id="usage-poll"))


def test_statusline_loads_no_heavy_module(tmp_path: Path) -> None:
    _five_profiles(tmp_path)
    out, modules = _probe(tmp_path)
    assert len(out.splitlines()) == 5
    assert not out.startswith("unknown")
    assert _heavy(modules) == set()
    assert {m for m in modules if m.split(".")[0] == "agent_accounts"} == OWN_MODULES


@pytest.mark.parametrize(
    ("preload", "caught"),
    [
        ("import dataclasses", "dataclasses"),
        ("import typing", "typing"),
        ("import ssl", "ssl"),
        ("import shutil", "shutil"),
    ],
)
def test_the_module_probe_sees_a_heavy_import(tmp_path: Path, preload: str, caught: str) -> None:
    """The probe reports what the process loaded: an empty set above means something."""
    _five_profiles(tmp_path)
    _, modules = _probe(tmp_path, preload)
    assert caught in _heavy(modules)
