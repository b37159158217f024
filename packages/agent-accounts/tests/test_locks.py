"""Refresh locks: proper-lockfile interop, heartbeat, kill -9 reclaim, what is not reclaimed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from accounts_locks_support import (
    config_lock,
    due_token_server,
    record,
    refresh,
    seed_due,
    wait_for,
)
from accounts_refresh_support import (
    PAUSE_ENV,
    PAUSE_STEPS,
    TokenServer,
    assert_no_canary,
    leftovers,
    write_file,
)
from agent_accounts.io import Profile

NODE_DIR = Path(__file__).resolve().parent / "node"

DRIVER = """
import asyncio, sys
from agent_accounts.io import Profile, refresh_if_needed

async def main() -> None:
    profile = Profile(label="work", config_dir=sys.argv[1])
    result = await refresh_if_needed(profile, margin_ms=600000, auth_url=sys.argv[2])
    print(result.status, getattr(result, "failure_text", ""), flush=True)

asyncio.run(main())
"""

NODE_HOLDER = """
const lockfile = require('proper-lockfile');
const [dir, lockPath] = process.argv.slice(1);
lockfile.lock(dir, { lockfilePath: lockPath, stale: 60000, realpath: false,
                     onCompromised: () => { console.log('compromised'); process.exit(3); } })
  .then((release) => {
    console.log('locked');
    process.stdin.once('data', async () => { await release(); console.log('released');
                                            process.exit(0); });
  }, (err) => { console.log('error ' + err.code); process.exit(1); });
"""

NODE_TRY = """
const lockfile = require('proper-lockfile');
const [dir, lockPath] = process.argv.slice(1);
lockfile.check(dir, { lockfilePath: lockPath, stale: 60000, realpath: false }).then((held) => {
  lockfile.lock(dir, { lockfilePath: lockPath, stale: 60000, realpath: false, retries: 0 })
    .then(async (release) => { await release(); console.log('held=' + held + ' acquired'); },
          (err) => console.log('held=' + held + ' ' + err.code));
});
"""


def legacy_lock(profile: Profile) -> Path:
    return Path(os.path.realpath(profile.config_dir) + ".lock")


async def spawn_driver(
    profile: Profile, server: TokenServer, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        DRIVER,
        str(profile.config_dir),
        server.url,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


@pytest.fixture
async def server() -> AsyncIterator[TokenServer]:
    """A local token server whose tokens are due again at once (shadows conftest's usage server)."""
    async with due_token_server() as running:
        yield running


# --- interop with the real npm proper-lockfile ------------------------------------------------


@contextlib.contextmanager
def node_holder(dir_: Path, lock_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        ["node", "-e", NODE_HOLDER, str(dir_), str(lock_path)],
        cwd=NODE_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("which", ["config", "legacy"])
async def test_a_real_proper_lockfile_holder_makes_refresh_locked_until_released(
    profile: Profile, server: TokenServer, which: str
) -> None:
    seed_due(profile, server)
    lock = config_lock(profile) if which == "config" else legacy_lock(profile)
    with node_holder(Path(profile.config_dir), lock) as holder:
        result = await refresh(profile, server)
        assert result.status == "locked"
        assert server.received == []
        assert lock.is_dir()  # never stolen
        assert holder.stdin is not None
        assert holder.stdout is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
    result = await refresh(profile, server)
    assert result.status == "refreshed"
    assert server.exchanges == 1
    assert leftovers(Path(profile.config_dir)) == []


async def test_proper_lockfile_sees_our_lock_as_held_and_fresh(
    profile: Profile, server: TokenServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seed_due(profile, server)
    marker = tmp_path / "paused"
    monkeypatch.setenv(PAUSE_ENV, f"locked:{marker}")
    task = asyncio.create_task(refresh(profile, server))
    await wait_for(marker)
    outcomes = []
    for lock in (config_lock(profile), legacy_lock(profile)):
        proc = await asyncio.create_subprocess_exec(
            "node",
            "-e",
            NODE_TRY,
            str(profile.config_dir),
            str(lock),
            cwd=NODE_DIR,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        outcomes.append(out.decode().strip())
    marker.unlink()
    result = await task
    assert outcomes == ["held=true ELOCKED", "held=true ELOCKED"]
    assert result.status == "refreshed"
    assert leftovers(Path(profile.config_dir)) == []


# --- heartbeat -------------------------------------------------------------------------------


async def test_release_frees_the_locks_when_the_record_removal_throws(
    profile: Profile, server: TokenServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_due(profile, server)
    real_unlink = os.unlink
    calls: list[str] = []

    def failing(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).endswith(".oauth_refresh.lock.holder"):
            calls.append(str(path))
            raise RuntimeError("record removal failed")
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", failing)
    result = await refresh(profile, server)
    assert result.status == "refreshed"
    assert len(calls) == 1
    assert not config_lock(profile).exists()
    assert not legacy_lock(profile).exists()
    assert record(profile).exists()  # its removal failed; the locks are free anyway


async def test_an_unusable_legacy_lock_is_skipped_and_the_config_lock_serializes(
    profile: Profile, server: TokenServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    seed_due(profile, server)
    real_mkdir = os.mkdir
    legacy = str(legacy_lock(profile))

    def read_only(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path) == legacy:
            raise OSError(errno.EROFS, "Read-only file system")
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only)
    assert (await refresh(profile, server)).status == "refreshed"
    config_lock(profile).mkdir()
    seed_due(profile, server)
    assert (await refresh(profile, server)).status == "locked"
    config_lock(profile).rmdir()


# --- crashes: kill -9 at each named step, then the next run reclaims ---------------------------


@pytest.mark.slow
@pytest.mark.parametrize("step", PAUSE_STEPS)
async def test_kill_9_at_each_step_then_the_next_run_reclaims(
    profile: Profile, server: TokenServer, tmp_path: Path, step: str
) -> None:
    seed_due(profile, server)
    marker = tmp_path / f"at-{step}"
    proc = await spawn_driver(profile, server, {PAUSE_ENV: f"{step}:{marker}"})
    await wait_for(marker, proc)
    proc.send_signal(signal.SIGKILL)
    out, err = await proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert config_lock(profile).is_dir()  # the crash left the lock behind
    # Intent before effect: a record of the dead pid names the lock dir it left.
    records = [
        json.loads(p.read_bytes())
        for p in Path(profile.config_dir).iterdir()
        if p.name == record(profile).name or p.name.endswith(".intent")
    ]
    lock_st = config_lock(profile).stat()
    assert any(
        r["pid"] == proc.pid
        and any(
            e["ino"] == lock_st.st_ino and lock_st.st_mtime_ns in e["mtimes_ns"] for e in r["locks"]
        )
        for r in records
    )
    if step != "config-locked":
        assert legacy_lock(profile).is_dir()
    spent_before = set(server.spent)
    received_before = len(server.received)

    second = await spawn_driver(profile, server)
    out, err = await second.communicate()
    status = out.decode().split()
    assert status[0] != "locked", status
    # Killed after the answer reached the disk (temp-written, before-replace), the next run
    # finishes the dead run's work without a request (roll forward). Killed while the answer
    # was only in memory (requested) the login is lost: the one window no design can close.
    if step == "requested":
        assert status == ["failed", "http-400"]
    else:
        assert status == ["refreshed"]
    if step in ("temp-written", "before-replace"):
        assert len(server.received) == received_before  # rolled forward, nothing spent
        doc = json.loads((Path(profile.config_dir) / ".credentials.json").read_bytes())
        assert doc["agentOauth"]["refreshToken"] in server.valid
    assert leftovers(Path(profile.config_dir)) == []
    assert not any(t in spent_before for t in server.received[len(spent_before) + 1 :])
    assert_no_canary(out, err)


# --- what is never reclaimed -----------------------------------------------------------------


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_record(profile: Profile, pid: int, dirs: list[Path], *, shift: int = 0) -> bytes:
    entries = []
    for d in dirs:
        st = d.lstat()
        entries.append(
            {
                "path": str(d),
                "dev": st.st_dev,
                "ino": st.st_ino,
                "mtimes_ns": [st.st_mtime_ns + shift],
            }
        )
    return json.dumps({"pid": pid, "locks": entries}).encode()


def orphan_locks(profile: Profile) -> list[Path]:
    dirs = [config_lock(profile), legacy_lock(profile)]
    for d in dirs:
        d.mkdir()
    return dirs


async def test_a_dead_holder_with_matching_identity_is_reclaimed(
    profile: Profile, server: TokenServer
) -> None:
    seed_due(profile, server)
    dirs = orphan_locks(profile)
    write_file(record(profile), write_record(profile, dead_pid(), dirs))
    assert (await refresh(profile, server)).status == "refreshed"
    assert leftovers(Path(profile.config_dir)) == []


@pytest.mark.parametrize(
    "case",
    [
        "no-record",
        "live-pid",
        "identity-differs",
        "fifo",
        "symlink",
        "foreign-owner",
        "mode-too-wide",
        "hard-linked",
        "garbage",
        "pid-zero",
    ],
)
async def test_what_is_never_reclaimed(
    profile: Profile, server: TokenServer, tmp_path: Path, case: str
) -> None:
    seed_due(profile, server)
    dirs = orphan_locks(profile)
    rec = record(profile)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        good = write_record(profile, dead_pid(), dirs)
        if case == "live-pid":
            write_file(rec, write_record(profile, live.pid, dirs))
        elif case == "identity-differs":
            write_file(rec, write_record(profile, dead_pid(), dirs, shift=1))
        elif case == "fifo":
            os.mkfifo(rec, 0o600)
        elif case == "symlink":
            write_file(tmp_path / "real-record", good)
            rec.symlink_to(tmp_path / "real-record")
        elif case == "foreign-owner":
            write_file(rec, good)
            os.chown(rec, 4242, 4242)
        elif case == "mode-too-wide":
            write_file(rec, good, mode=0o644)
        elif case == "hard-linked":
            write_file(rec, good)
            os.link(rec, tmp_path / "other-name")
        elif case == "garbage":
            write_file(rec, b"not json")
        elif case == "pid-zero":
            write_file(rec, good.replace(b'"pid": ', b'"pid": 0, "was": '))
        result = await asyncio.wait_for(refresh(profile, server), timeout=30)
    finally:
        live.kill()
        live.wait()
    assert result.status == "locked"
    assert server.received == []
    for d in dirs:
        assert d.is_dir()


async def test_a_record_naming_other_paths_removes_nothing_there(
    profile: Profile, server: TokenServer, tmp_path: Path
) -> None:
    seed_due(profile, server)
    dirs = orphan_locks(profile)
    bystander = tmp_path / "bystander"
    bystander.mkdir()
    write_file(record(profile), write_record(profile, dead_pid(), [*dirs, bystander]))
    assert (await refresh(profile, server)).status == "refreshed"
    assert bystander.is_dir()
