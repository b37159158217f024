"""The pure core opens no file, socket or process, reads no environment and no clock.

A fresh interpreter installs an audit hook before `import agent_accounts` and the lookup of every
public name (the front door loads names on first use), then calls every public function on inputs
that reach each branch. Standard-library modules are imported first, so only the
core's own behaviour is audited: during its import it may only read its own module files (and the
standard library's); during the calls nothing at all may happen, not even an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

SCRIPT = textwrap.dedent(
    """
    import sys, json, os, importlib.util, sysconfig, time
    import __future__, collections.abc, dataclasses, datetime, math, re, typing  # noqa: F401

    PKG_DIR = os.path.dirname(importlib.util.find_spec("agent_accounts").origin) + os.sep
    STDLIB = sysconfig.get_paths()["stdlib"] + os.sep
    FORBIDDEN = ("open", "socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn",
                 "os.spawn", "os.fork", "os.listdir", "os.scandir", "os.walk", "os.putenv",
                 "os.unsetenv", "os.chdir", "os.remove", "os.unlink", "os.rename", "os.mkdir",
                 "os.rmdir", "os.chmod", "os.chown", "os.truncate", "os.link", "os.symlink",
                 "shutil.", "urllib.", "http.", "ftplib.", "smtplib.", "ctypes.", "glob.",
                 "fcntl.", "mmap.", "sqlite3.", "webbrowser.", "pty.", "resource.", "signal.")
    events, env_reads, clock_reads = [], [], []
    phase = ["import"]

    def hook(event, args):
        if phase[0] == "import":
            if event in ("open", "os.listdir") and args and isinstance(args[0], str):
                path = args[0]
                if path.startswith((PKG_DIR, STDLIB)) or path + os.sep == PKG_DIR:
                    return  # the import system reading module files
        elif event == "import":
            events.append((phase[0], event, str(args[0])))  # a lazy import while called
            return
        if event.startswith(FORBIDDEN):
            events.append((phase[0], event, str(args[0]) if args else ""))

    class EnvSpy(dict):
        def __getitem__(self, k):
            env_reads.append(k); return super().__getitem__(k)
        def get(self, k, d=None):
            env_reads.append(k); return super().get(k, d)
        def __contains__(self, k):
            env_reads.append(k); return super().__contains__(k)
        def __iter__(self):
            env_reads.append("<iter>"); return super().__iter__()
        def keys(self):
            env_reads.append("<keys>"); return super().keys()
        def items(self):
            env_reads.append("<items>"); return super().items()
        def copy(self):
            env_reads.append("<copy>"); return super().copy()

    def clock(name, real):
        def spy(*a):
            clock_reads.append(name); return real(*a)
        return spy

    os.environ = EnvSpy(os.environ)
    for name in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "localtime",
                 "gmtime", "ctime", "strftime"):
        setattr(time, name, clock(name, getattr(time, name)))
    sys.addaudithook(hook)

    import agent_accounts as aa
    # The front door loads each name on first use (PEP 562), so resolving the names is part of
    # the import and audited with it; the calls below must then do nothing, not even an import.
    for name in aa.__all__:
        getattr(aa, name)
    phase[0] = "calls"

    # PROBE

    class Throwing(dict):
        def get(self, *a):
            raise RuntimeError("boom")
        def __getitem__(self, k):
            raise RuntimeError("boom")

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    class TwoArgs(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    now = 1_700_000_000_000
    creds = [None, {}, [], {"agentOauth": None}, {"agentOauth": Throwing()}, Throwing(),
             {"agentOauth": {"accessToken": "sk-ant-oat01-CANARY", "expiresAt": now + 1,
                             "refreshToken": "r", "refreshTokenExpiresAt": now + 5,
                             "subscriptionType": "max", "rateLimitTier": "tier"}},
             {"agentOauth": {"accessToken": "a", "expiresAt": now - 1}},
             {"agentOauth": {"accessToken": "a", "expiresAt": 5}}]
    for c in creds:
        state = aa.login_state_from_credentials(c, now)
        state.to_json()
        aa.needs_refresh(state, now, 60_000)
    for bad in ((now, -1), (float("nan"), 0)):
        try:
            aa.needs_refresh(state, *bad)
        except ValueError:
            pass
    try:
        aa.login_state_from_credentials({}, float("inf"))
    except ValueError:
        pass
    aa.parse_usage_reading({"session_id": "s", "written_at": 1, "source": "x", "account": "y",
                            "rate_limits": {"five_hour": {"used_percentage": 1, "resets_at": 2}}})
    aa.parse_usage_reading(Throwing())
    aa.parse_usage_reading(None)
    body = {"five_hour": {"utilization": 1, "resets_at": "2026-01-01T00:00:00Z"},
            "seven_day": {"utilization": 2, "resets_at": "2026-01-01T00:00:00"},
            "seven_day_opus": {"utilization": 2, "resets_at": "nope"},
            "extra_usage": None, "Bad-Key": {"utilization": 1, "resets_at": None}}
    aa.usage_from_oauth_response(body, written_at=1, account="work")
    aa.usage_from_oauth_response(Throwing(), written_at=1)
    aa.account_label("/x/.agent")
    aa.account_label("/x/.agent-profiles/work", home="/x")
    for text in ("token=abc", "Bearer x", "sk-ant-oat01-x", "eyJa.b.c", "a" * 40,
                 '{"password": "p"}', "plain"):
        aa.redact_secrets(text)
    for exc in (ValueError("token=abc"), Unprintable(), TwoArgs("a", 1), KeyError("k")):
        exc.add_note("note Bearer x")
        aa.redact_secrets(exc)
    aa.redact_secrets(object())
    reading = {"session_id": "s", "written_at": 1_700_000_000, "rate_limits": {
        "five_hour": {"used_percentage": 50, "resets_at": 1_700_009_000},
        "seven_day": {"used_percentage": 100, "resets_at": 1_700_100_000},
        "seven_day_opus": {"used_percentage": 0}, "other": {"used_percentage": 3,
                                                          "resets_at": 1}}}
    for pace in aa.reading_pace(reading, 1_700_000_000).values():
        pace.to_json()
    logins = [aa.login_state_from_credentials(c, now) for c in creds]
    cands = [aa.BestCandidate(label=str(i), config_dir="/x", login=l, reading=r)
             for i, l in enumerate(logins + [None]) for r in (None, reading)]
    aa.choose_best(cands, 1_700_000_100)
    aa.choose_best(cands, 1_700_000_100, windows=("five_hour", "nope"), max_age_s=1)
    for bad in ((cands, float("nan")), ([], 1.0)):
        try:
            aa.choose_best(*bad, windows=() if bad[1] == 1.0 else ("five_hour",))
        except ValueError:
            pass
    phase[0] = "done"
    print(json.dumps({"events": events, "env": env_reads, "clock": clock_reads,
                      "httpx": "httpx" in sys.modules,
                      "io": "agent_accounts.io" in sys.modules}))
    """
)


def _run(script: str) -> dict[str, Any]:
    # -I: no user site or PYTHON* variables; -B: no bytecode writes, so a fresh clone's first
    # import (which would write __pycache__) is audited the same as a warm one.
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_core_does_no_io_reads_no_environment_and_no_clock() -> None:
    result = _run(SCRIPT)
    assert result["events"] == []
    assert result["env"] == []
    assert result["clock"] == []
    assert result["httpx"] is False, "the pure core imported httpx"
    assert result["io"] is False, "the pure core imported its I/O layer"


@pytest.mark.parametrize(
    ("probe", "key", "expected"),
    [
        ("open(os.devnull).close()", "events", ["calls", "open", "/dev/null"]),
        ("os.listdir('/')", "events", ["calls", "os.listdir", "/"]),
        ("import socket; socket.socket().close()", "events", ["calls", "import", "socket"]),
        ("os.environ.get('HOME')", "env", "HOME"),
        ("os.getenv('HOME')", "env", "HOME"),
        ("time.time()", "clock", "time"),
    ],
)
def test_the_harness_sees_what_it_forbids(probe: str, key: str, expected: object) -> None:
    """Each probe, run where the core is called, is caught: an empty list above means something."""
    result = _run(SCRIPT.replace("# PROBE", probe))
    assert expected in result[key]
