"""Real faults around a refresh: a full disk, a login written during the final replace, a crash
between making a lock and recording it, and locks no record names."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from accounts_crash_support import Scene, new_scene, recover, run_cli, strace_prefix
from accounts_disk_support import fill_leaving, small_tmpfs
from accounts_refresh_support import (
    TokenServer,
    account_cli,
    canary_token,
    credentials,
    dump,
    leftovers,
    write_file,
)
from agent_accounts.io import Profile, refresh_if_needed

MARGIN = 600_000


@pytest.fixture
async def scene(tmp_path: Path) -> AsyncIterator[Scene]:
    made = await new_scene(tmp_path)
    yield made
    await made.server.stop()


# --- a full disk ---------------------------------------------------------------------------------


@pytest.mark.parametrize("free_pages", [0, 1, 2])
async def test_a_full_disk_fails_as_io_with_the_token_unspent(
    tmp_path: Path, free_pages: int
) -> None:
    server = TokenServer(expires_in=3600)
    await server.start()
    try:
        with small_tmpfs(tmp_path / "disk") as disk:
            config = disk / ".agent"
            config.mkdir(mode=0o700)
            token = canary_token("ort")
            server.seed(token)
            before = dump(
                credentials(expires_at_ms=int(time.time() * 1000) + 60_000, refresh=token)
            )
            write_file(config / ".credentials.json", before)
            fill_leaving(disk, free_pages)
            profile = Profile(label="work", config_dir=str(config))
            result = await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=server.url)
            assert result.status == "failed"
            assert getattr(result, "failure", None) == "io"
            assert server.received == []  # space before spending: nothing was sent
            assert (config / ".credentials.json").read_bytes() == before
            assert leftovers(config) == []
            # Space again: the same token, still unspent, refreshes.
            (disk / "filler").unlink()
            result = await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=server.url)
            assert result.status == "refreshed"
            assert server.received == [token]
            assert leftovers(config) == []
    finally:
        await server.stop()


# --- a login written during the final replace ---------------------------------------------------


async def test_a_login_written_while_the_replace_is_delayed_is_not_clobbered(
    scene: Scene, tmp_path: Path
) -> None:
    """strace delays the RENAME_EXCHANGE; the agent client writes a new login meanwhile."""
    log = tmp_path / "exchange.strace"
    # The third renameat2 is the install (the first two take the locks).
    prefix = strace_prefix(
        "-e", "trace=renameat2", "-e", "inject=renameat2:delay_enter=1500000:when=3", log=log
    )
    cli = asyncio.create_task(run_cli(scene, prefix))
    for _ in range(60_000):  # bounded: the CLI starts, spends the token, reaches the install
        if log.exists() and "RENAME_EXCHANGE" in log.read_text(errors="replace"):
            break
        assert not cli.done(), "the CLI ended before its install"
        await asyncio.sleep(0.002)
    # The refresher is inside the delayed exchange: the user logs in anew right now.
    fresh = canary_token("ort")
    scene.server.seed(fresh)
    login = dump(credentials(expires_at_ms=int(time.time() * 1000) + 8 * 3_600_000, refresh=fresh))
    write_file(scene.credentials, login)
    assert await cli == 0
    # The new login stands: the refresher swapped it out, saw it was not what it read, swapped it
    # back (two exchanges) and answered refreshed-elsewhere.
    assert scene.credentials.read_bytes() == login
    assert log.read_text().count("RENAME_EXCHANGE") == 2
    assert leftovers(scene.config) == []
    assert scene.server.exchanges == 1  # the refresher's own, whose login lost to the new one


# --- a crash between making a lock and recording it ----------------------------------------------


@pytest.mark.parametrize(
    ("syscall", "nth", "what"),
    [
        ("rename", 1, "intent record written, before the staging dir becomes the lock"),
        ("renameat2", 1, "at the config lock's rename"),
        ("mkdir", 2, "config lock held, before the legacy lock's staging dir"),
        ("rename", 3, "both locks held, before the record takes the holder name"),
    ],
)
async def test_a_crash_between_lock_and_record_leaves_a_lock_the_next_run_reclaims(
    scene: Scene, syscall: str, nth: int, what: str
) -> None:
    prefix = strace_prefix(
        "-e", f"trace={syscall}", "-e", f"inject={syscall}:signal=KILL:when={nth}"
    )
    code = await run_cli(scene, prefix)
    assert code in (-signal.SIGKILL, 128 + signal.SIGKILL), what
    outcome = await recover(scene, what, killed=True)
    assert outcome.results[0] == "refreshed", outcome
    assert scene.server.exchanges == 2


@pytest.mark.parametrize("age_s", [61, 7200])
async def test_a_lock_no_record_names_blocks_until_stale_then_is_retaken(
    scene: Scene, age_s: int
) -> None:
    """A lock dir with no record (an older refresher, or the agent client, crashed) is stale after
    60 s by the agent client's rule and retaken; before that it blocks, and says so."""
    lock = scene.config / ".oauth_refresh.lock"
    lock.mkdir()
    profile = Profile(label="default", config_dir=str(scene.config))
    held = await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=scene.server.url)
    assert held.status == "locked"
    proc = await asyncio.create_subprocess_exec(
        account_cli(),
        "poll",
        "--write",
        "--refresh",
        env=scene.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert b"token refresh locked" in err  # never silent
    old = time.time() - age_s
    os.utime(lock, (old, old))
    result = await refresh_if_needed(profile, margin_ms=MARGIN, auth_url=scene.server.url)
    assert result.status == "refreshed"
    assert not lock.exists()
    assert leftovers(scene.config) == []
    assert json.loads(scene.credentials.read_bytes())["agentOauth"]["refreshToken"] in (
        scene.server.valid
    )
