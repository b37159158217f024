"""Crash harness: `account-cli poll --write --refresh` killed at every state-changing system call.

See `accounts_crash_support` for how the kill points are chosen. After each crash the next two
runs must leave no stuck lock, lose no login that had reached the disk, spend no refresh token
twice, and the credentials file must always hold the old login or the new one. The one window no
design closes (the answer arrived, nothing on disk) is counted, not excused: it must be the only
way a login is lost, and it must stay small.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from pathlib import Path

import pytest

from accounts_crash_support import (
    Outcome,
    Scene,
    kill_points,
    new_scene,
    recover,
    reference_log,
    run_cli,
    strace_prefix,
)
from accounts_refresh_support import account_cli

PARALLEL = 2
RANDOM_KILLS = 8
RANDOM_SEED = 14


async def _one_point(root: Path, prefix: list[str], point: str) -> Outcome:
    scene = await new_scene(root)
    try:
        code = await run_cli(scene, prefix)
        return await recover(scene, point, killed=code in (-signal.SIGKILL, 128 + signal.SIGKILL))
    finally:
        await scene.server.stop()


async def _kill_in_time(root: Path, delay: float) -> Outcome:
    """Start a plain CLI run, wait for its first lock step, kill -9 it `delay` s later."""
    scene: Scene = await new_scene(root)
    try:
        proc = await asyncio.create_subprocess_exec(
            account_cli(),
            "poll",
            "--write",
            "--refresh",
            env=scene.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(20_000):  # bounded: at most ~100 s on a loaded machine
            if proc.returncode is not None or any(
                p.name.startswith(".oauth_refresh.lock") for p in scene.config.iterdir()
            ):
                break
            await asyncio.sleep(0.005)
        await asyncio.sleep(delay)
        killed = proc.returncode is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
        return await recover(scene, f"kill -9 {delay * 1000:.0f} ms in", killed=killed)
    finally:
        await scene.server.stop()


@pytest.mark.slow
async def test_kill_9_at_every_state_changing_syscall_and_at_random_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = kill_points(await reference_log(tmp_path / "reference"))
    assert len(points) >= 20  # locks, record, temp file, request, install, release
    gate = asyncio.Semaphore(PARALLEL)

    async def run(index: int, syscall: str, nth: int, what: str) -> Outcome:
        prefix = strace_prefix(
            "-e", f"trace={syscall}", "-e", f"inject={syscall}:signal=KILL:when={nth}"
        )
        async with gate:
            return await _one_point(tmp_path / f"p{index}", prefix, f"{syscall}#{nth} ({what})")

    outcomes = await asyncio.gather(
        *(run(i, p.syscall, p.nth, p.what) for i, p in enumerate(points))
    )
    rng = random.Random(RANDOM_SEED)
    delays = [rng.uniform(0.0, 0.3) for _ in range(RANDOM_KILLS)]

    async def timed(index: int, delay: float) -> Outcome:
        async with gate:
            return await _kill_in_time(tmp_path / f"t{index}", delay)

    timed_outcomes = await asyncio.gather(*(timed(i, d) for i, d in enumerate(delays)))

    killed = [o for o in outcomes if o.killed]
    # Nearly every point is a real crash (the injection hit). A call counted in the reference run
    # may come later or not at all in another (a heartbeat on a loaded machine adds calls); such
    # a run ended normally and was checked all the same.
    missed = [o.point for o in outcomes if not o.killed]
    tally = Counter(o.category for o in outcomes)
    timed_tally = Counter(o.category for o in timed_outcomes)
    window = [o.point for o in outcomes if o.category.startswith("window")]
    with capsys.disabled():
        print(
            f"\ncrash harness: {len(outcomes)} kill points (syscall entry and right after),"
            f" {len(killed)} killed there"
        )
        for category, count in sorted(tally.items()):
            print(f"  {count:4d}  {category}")
        print(f"  window points: {', '.join(window)}")
        print(f"  not killed (call count moved): {', '.join(missed) or 'none'}")
        print(f"random kills 0-300 ms after the first lock step: {len(timed_outcomes)}")
        for category, count in sorted(timed_tally.items()):
            print(f"  {count:4d}  {category}")
    assert len(missed) <= len(outcomes) // 10, missed
    # The unclosable window is the answer's read to its bytes in the temp file: a few calls.
    assert 1 <= len(window) <= 6, window
    assert tally["answer on disk: rolled forward"] >= 2
