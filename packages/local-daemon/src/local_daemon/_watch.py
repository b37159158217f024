"""`watch_tree`: a debounced recursive watcher over `watchfiles.awatch`.

On Linux `watchfiles` (the `notify` crate) walks the tree and adds one inotify watch per
directory, and adds one for every directory created later before it reports that creation; on
macOS and Windows it holds one native recursive handle. Either way one handle covers the root.

Those handles follow the root's inode, not its name: once the root is deleted nothing more is
ever reported, and once it is renamed, changes in the old tree come back under the root's name.
The kernel's report that the root itself was deleted or moved (`notify` reports both as the
root deleted) is the signal: the watch is gone, whatever inode the name leads to next (ext4
hands a directory made at once after `rm -rf` the old inode number). As a backstop the watch
also checks the root's identity (device and inode) on every batch and a few times a second.
Either way it reports the root itself as changed (`[root]`, "everything under it may differ"),
drops that watch, waits for the name to lead to a directory again, re-arms on it and reports
the root once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import stat
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

__all__ = ["ChangeCallback", "ErrorCallback", "TreeWatch", "watch_tree"]

_log = logging.getLogger("local_daemon")

ChangeCallback = Callable[[list[str]], "Awaitable[None] | None"]
ErrorCallback = Callable[[BaseException], "Awaitable[None] | None"]

# Directories created after the watch started that we have seen reported (and so are watched).
_MAX_SEEN = 4096
# A run of changes that never pauses is still reported at least this often.
_MAX_BATCH_MS = 1600
# How often the root's identity is checked between batches, and its return awaited.
_ROOT_POLL = 0.25

_Identity = tuple[int, int]


def _identity(root: Path) -> _Identity | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


async def _call(callback: Callable[..., object], *args: object) -> None:
    result = callback(*args)
    if inspect.isawaitable(result):
        await result


class TreeWatch:
    """A running watch: `is_watching(path)`, `await when_watching(path)`, `await close()`."""

    def __init__(
        self,
        root: Path,
        on_change: ChangeCallback,
        *,
        debounce: float,
        on_error: ErrorCallback | None,
    ) -> None:
        self.root = root
        self._on_change = on_change
        self._on_error = on_error
        self._debounce_ms = max(1, int(debounce * 1000))
        self._stop = asyncio.Event()
        self._arm_stop = asyncio.Event()
        self._started = asyncio.Event()
        self._armed = False
        self._batch = asyncio.Event()
        # Path -> True when it is a directory whose creation was reported (see is_watching).
        self._seen: OrderedDict[str, bool] = OrderedDict()
        self._start_ns = time.time_ns()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            identity = _identity(self.root)
            rearmed = False
            while True:
                await self._watch_once(identity, announce=rearmed)
                if self._stop.is_set():
                    return
                # The root went away or was replaced: say so, then wait for it to come back.
                _log.warning("watch_tree: the watch root is gone or replaced; re-arming")
                await self._deliver([str(self.root)])
                identity = await self._wait_for_root()
                if identity is None:
                    return
                rearmed = True
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._report(exc)
        finally:
            self._armed = False
            self._started.set()
            self._notify_batch()

    async def _watch_once(self, identity: _Identity | None, *, announce: bool) -> None:
        """Watch the tree at the root until stopped or until the root is no longer `identity`."""
        loop = asyncio.get_running_loop()
        self._arm_stop = arm_stop = asyncio.Event()
        if self._stop.is_set():
            arm_stop.set()
        self._seen.clear()
        self._start_ns = time.time_ns()

        def armed() -> None:
            self._armed = True
            self._started.set()
            self._notify_batch()

        # `awatch` builds its native watcher (walking the tree) synchronously before its first
        # await, so a callback scheduled now runs only once every existing directory is watched.
        loop.call_soon(armed)
        guard = loop.create_task(self._guard_root(identity, arm_stop, announce=announce))
        try:
            await self._watch_changes(identity, arm_stop)
        except Exception:
            # A watcher that fails because its root went away is re-armed like one that stopped.
            if identity is None or _identity(self.root) == identity:
                raise
        finally:
            self._armed = False
            self._notify_batch()
            guard.cancel()
            await asyncio.gather(guard, return_exceptions=True)

    async def _watch_changes(self, identity: _Identity | None, arm_stop: asyncio.Event) -> None:
        from watchfiles import Change, awatch

        root = str(self.root)
        async for changes in awatch(
            self.root,
            # watchfiles yields once `step` ms pass without a change (the quiet window
            # that ends a burst) or once `debounce` ms pass in all; that cap only bounds
            # how late a never-ending run of changes is reported, so it must not cut a
            # burst whose changes keep coming within the quiet window.
            debounce=max(_MAX_BATCH_MS, 10 * self._debounce_ms),
            step=self._debounce_ms,
            stop_event=arm_stop,
            recursive=True,
        ):
            if (
                identity is None
                or (Change.deleted, root) in changes
                or _identity(self.root) != identity
            ):
                # The kernel says the root itself was deleted or moved away (its watch is gone,
                # whatever inode the name leads to next), or the name leads elsewhere: these
                # paths may name the old tree under its old name, so they are not reported.
                arm_stop.set()
                break
            self._record((change == Change.added, path) for change, path in changes)
            self._notify_batch()
            await self._deliver(sorted({path for _, path in changes}))

    async def _guard_root(
        self, identity: _Identity | None, arm_stop: asyncio.Event, *, announce: bool
    ) -> None:
        if announce:
            # This task first runs after `armed`: once this is reported, the new tree is watched.
            await self._deliver([str(self.root)])
        # Between batches too: a deleted root may never produce another one.
        while not arm_stop.is_set():
            if _identity(self.root) != identity:
                arm_stop.set()
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arm_stop.wait(), _ROOT_POLL)

    async def _wait_for_root(self) -> _Identity | None:
        while not self._stop.is_set():
            identity = _identity(self.root)
            if identity is not None:
                return identity
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), _ROOT_POLL)
        return None

    async def _deliver(self, paths: list[str]) -> None:
        try:
            await _call(self._on_change, paths)
        except Exception as exc:
            await self._report(exc)

    async def _report(self, exc: Exception) -> None:
        if self._on_error is None:
            _log.error("watch_tree: %s", type(exc).__name__)
            return
        try:
            await _call(self._on_error, exc)
        except Exception as failure:
            _log.error("watch_tree on_error failed: %s", type(failure).__name__)

    def _record(self, changes: Iterable[tuple[bool, str]]) -> None:
        for added, path in changes:
            # An event from inside a directory proves that directory is watched.
            self._remember(path, walked=added and os.path.isdir(path))
            self._remember(os.path.dirname(path))

    def _remember(self, path: str, *, walked: bool = False) -> None:
        self._seen[path] = walked or self._seen.get(path, False)
        self._seen.move_to_end(path)
        while len(self._seen) > _MAX_SEEN:
            self._seen.popitem(last=False)

    def _notify_batch(self) -> None:
        self._batch.set()
        self._batch = asyncio.Event()

    def _covered_dir(self, directory: Path) -> bool:
        try:
            ctime_ns = directory.stat().st_ctime_ns
        except OSError:
            return False
        return ctime_ns < self._start_ns or str(directory) in self._seen

    def is_watching(self, path: str | os.PathLike[str]) -> bool:
        """Return True when `path` exists under the root and its directories are watched."""
        if not self._armed or self._task.done():
            return False
        target = Path(os.path.abspath(path))
        root = Path(os.path.abspath(self.root))
        if target != root and root not in target.parents:
            return False
        if not target.exists():
            return False
        directory = target if target.is_dir() else target.parent
        chain = [directory, *[p for p in directory.parents if root in p.parents or p == root]]
        covered = [self._covered_dir(d) for d in chain]
        for index, d in enumerate(chain):
            # `notify` watches a new directory and walks it, watching every directory already
            # under it, before it reports the creation; those inner ones (`mkdir -p a/b/c`)
            # are never reported themselves, so the reported ancestor vouches for them.
            if self._seen.get(str(d)) and all(covered[index + 1 :]):
                return True
        return all(covered)

    async def when_watching(self, path: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
        """Wait until `path` is covered; raise TimeoutError after `timeout` seconds."""
        async with asyncio.timeout(timeout):
            await self._started.wait()
            while not self.is_watching(path):
                if self._task.done():
                    raise RuntimeError("the watcher has stopped")
                await self._batch.wait()

    async def close(self) -> None:
        """Stop watching and wait for the watcher to finish."""
        self._stop.set()
        self._arm_stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5.0)
            except TimeoutError:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)


def watch_tree(
    root: str | os.PathLike[str],
    on_change: ChangeCallback,
    *,
    debounce: float = 0.05,
    on_error: ErrorCallback | None = None,
) -> TreeWatch:
    """Watch `root` recursively; call `on_change(paths)` once per debounced burst of changes.

    When the root is deleted or renamed, `on_change([root])` reports it, and the watch re-arms
    (with `on_change([root])` again) once the name leads to a directory again.
    """
    return TreeWatch(Path(os.path.abspath(root)), on_change, debounce=debounce, on_error=on_error)
