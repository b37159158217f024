"""`watch_tree` over real file writes."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from local_daemon import watch_tree

_TIMEOUT = 10.0


class Batches:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[list[str]] = asyncio.Queue()
        self.every: list[list[str]] = []

    def __call__(self, paths: list[str]) -> None:
        self.every.append(paths)
        self.queue.put_nowait(paths)

    async def until_exactly(self, path: Path, *, limit: float = _TIMEOUT) -> list[str]:
        """Return the first batch naming exactly `path` (bounded by time)."""
        async with asyncio.timeout(limit):
            while True:
                batch = await self.queue.get()
                if str(path) in batch:
                    return batch

    async def until(self, needle: str, *, limit: float = _TIMEOUT) -> list[str]:
        """Return the first batch naming `needle` (bounded by time)."""
        async with asyncio.timeout(limit):
            while True:
                batch = await self.queue.get()
                if any(needle in path for path in batch):
                    return batch

    async def until_written(self, path: Path, text: str, *, tries: int = 4) -> list[str]:
        """Write `path` until a batch names it (at most `tries` writes, 2.5 s apart).

        inotify covers a new directory only once the watcher has added it, so a write landing in
        that instant is lost by the kernel; a later write must still be seen.
        """
        for _ in range(tries - 1):
            path.write_text(text)
            try:
                return await self.until(path.name, limit=2.5)
            except TimeoutError:
                continue
        path.write_text(text)
        return await self.until(path.name)


async def test_nested_and_new_directories(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    batches = Batches()
    watch = watch_tree(tmp_path, batches)
    try:
        await watch.when_watching(nested)
        assert watch.is_watching(nested)
        assert watch.is_watching(tmp_path)
        assert not watch.is_watching(tmp_path.parent)
        (nested / "deep.txt").write_text("x")
        await batches.until("deep.txt")
        fresh = tmp_path / "new" / "inner"
        fresh.mkdir(parents=True)
        await watch.when_watching(fresh)
        assert watch.is_watching(fresh)
        batch = await batches.until_written(fresh / "late.txt", "y")
        assert str(fresh / "late.txt") in batch
    finally:
        await watch.close()
    assert not watch.is_watching(tmp_path)


async def test_a_burst_counts_once(tmp_path: Path) -> None:
    batches = Batches()
    watch = watch_tree(tmp_path, batches, debounce=0.3)
    try:
        await watch.when_watching(tmp_path)
        for n in range(20):
            (tmp_path / f"f{n}.txt").write_text(str(n))
        batch = await batches.until("f0.txt")
        assert {f"f{n}.txt" for n in range(20)} <= {Path(p).name for p in batch}
        # One more, well after the burst: a separate callback, and no other batch in between.
        (tmp_path / "after.txt").write_text("z")
        nxt = await batches.until("after.txt")
        assert all("after.txt" in p for p in nxt)
    finally:
        await watch.close()


async def test_on_error_gets_a_failing_callback(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def boom(paths: list[str]) -> None:
        raise ValueError("callback failed")

    watch = watch_tree(tmp_path, boom, on_error=errors.append)
    try:
        await watch.when_watching(tmp_path)
        (tmp_path / "x").write_text("x")
        async with asyncio.timeout(_TIMEOUT):
            while not errors:
                await asyncio.sleep(0.01)
        assert isinstance(errors[0], ValueError)
        # The watcher keeps going after a failing callback.
        assert watch.is_watching(tmp_path)
    finally:
        await watch.close()


async def test_missing_root_reports_an_error(tmp_path: Path) -> None:
    errors: list[BaseException] = []
    watch = watch_tree(tmp_path / "missing", lambda paths: None, on_error=errors.append)
    try:
        with pytest.raises((RuntimeError, TimeoutError)):
            await watch.when_watching(tmp_path / "missing", timeout=5.0)
    finally:
        await watch.close()
    assert errors


async def test_a_long_burst_within_the_quiet_window_counts_once(tmp_path: Path) -> None:
    # Writes keep coming, each well within the quiet window, for longer than the window
    # itself: the burst only ends once the writes pause, so it is one callback.
    batches = Batches()
    watch = watch_tree(tmp_path, batches, debounce=0.5)
    try:
        await watch.when_watching(tmp_path)
        for n in range(80):
            (tmp_path / f"g{n}.txt").write_text(str(n))
            await asyncio.sleep(0.01)
        batch = await batches.until("g0.txt")
        assert {f"g{n}.txt" for n in range(80)} <= {Path(p).name for p in batch}
    finally:
        await watch.close()


async def test_when_watching_a_tree_made_at_once(tmp_path: Path) -> None:
    # `mkdir -p a/b/c`: the watcher walks `a` when it sees it created and never reports `b`
    # or `c` themselves; a covered path must still resolve (it used to wait for good half
    # the time). Several trees, so a regression shows however the race falls.
    watch = watch_tree(tmp_path, Batches())
    try:
        await watch.when_watching(tmp_path)
        for n in range(6):
            deep = tmp_path / f"t{n}" / "b" / "c"
            deep.mkdir(parents=True)
            await watch.when_watching(deep, timeout=_TIMEOUT)
            assert watch.is_watching(deep)
            assert watch.is_watching(deep.parent)
    finally:
        await watch.close()


async def test_root_deleted_and_recreated_is_watched_again(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    batches = Batches()
    watch = watch_tree(root, batches)
    try:
        await watch.when_watching(root / "sub")
        await batches.until_written(root / "sub" / "before.txt", "x")
        shutil.rmtree(root)
        # The root itself is reported: everything under it is gone.
        assert await batches.until_exactly(root) == [str(root)]
        assert not watch.is_watching(root)
        (root / "sub").mkdir(parents=True)
        await watch.when_watching(root / "sub")
        assert watch.is_watching(root)
        batch = await batches.until_written(root / "sub" / "after.txt", "y")
        assert str(root / "sub" / "after.txt") in batch
    finally:
        await watch.close()


async def test_root_renamed_reports_the_root_not_the_old_tree(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    batches = Batches()
    watch = watch_tree(root, batches)
    try:
        await watch.when_watching(root / "sub")
        old = tmp_path / "old"
        root.rename(old)
        assert await batches.until_exactly(root) == [str(root)]
        # The old tree is no longer the root: a change there is not reported under the root.
        (old / "sub" / "stale.txt").write_text("x")
        root.mkdir()
        await watch.when_watching(root)
        await batches.until_written(root / "fresh.txt", "y")
        reported = [path for batch in batches.every for path in batch]
        assert not [path for path in reported if "stale.txt" in path]
        assert all(path == str(root) or path.startswith(f"{root}/") for path in reported)
    finally:
        await watch.close()


async def test_root_replaced_by_another_directory_is_re_armed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    staged = tmp_path / "staged"
    staged.mkdir()
    batches = Batches()
    watch = watch_tree(root, batches)
    try:
        await watch.when_watching(root)
        # A deploy that swaps in a new build by rename: the name now leads to another inode.
        root.rename(tmp_path / "previous")
        staged.rename(root)
        await batches.until_exactly(root)
        await watch.when_watching(root)
        (tmp_path / "previous" / "old.txt").write_text("x")
        await batches.until_written(root / "new.txt", "y")
        assert not [p for batch in batches.every for p in batch if "old.txt" in p]
    finally:
        await watch.close()


class Rescans(Batches):
    """A consumer as the daemon is one: `[root]` means "rescan", other paths name themselves."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.learnt: asyncio.Queue[set[str]] = asyncio.Queue()

    def __call__(self, paths: list[str]) -> None:
        super().__call__(paths)
        if str(self.root) in paths:
            try:
                self.learnt.put_nowait({str(self.root / name) for name in os.listdir(self.root)})
            except OSError:  # the root is gone right now: nothing under it to learn
                self.learnt.put_nowait(set())
        else:
            self.learnt.put_nowait(set(paths))

    async def learns(self, path: Path, *, limit: float = 5.0) -> None:
        """Return once a batch delivered from now on tells of `path` (fail after `limit`)."""
        async with asyncio.timeout(limit):
            while str(path) not in await self.learnt.get():
                pass


@pytest.fixture
def tmpfs_dir(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mountpoint = tmp_path / "tmpfs"
    mountpoint.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "--lazy", str(mountpoint)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("filesystem", ["tests' own", "tmpfs"])
async def test_root_removed_and_made_again_at_once_100_times(
    filesystem: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # `rm -rf root; mkdir root` back to back: ext4 gives the new directory the old inode number
    # at once, so only the kernel's "the root was deleted" tells the watch it has gone deaf.
    base = request.getfixturevalue("tmpfs_dir") if filesystem == "tmpfs" else tmp_path
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    rescans = Rescans(root)
    watch = watch_tree(root, rescans, debounce=0.01)
    try:
        await watch.when_watching(root / "sub")
        for n in range(100):
            shutil.rmtree(root)
            root.mkdir()
            written = root / f"f{n}.txt"
            written.write_text(str(n))
            await rescans.learns(written)
        # Still listening, not only rescanning: a plain write is reported by name.
        await watch.when_watching(root)
        await rescans.until_written(root / "last.txt", "z")
    finally:
        await watch.close()
