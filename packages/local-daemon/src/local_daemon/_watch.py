"""`watch_tree`: a debounced recursive watcher over `watchfiles.awatch`.

On Linux `watchfiles` (the `notify` crate) walks the tree and adds one inotify watch per
directory, and adds one for every directory created later before it reports that creation; on
macOS and Windows it holds one native recursive handle. Either way one handle covers the root.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
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
        self._started = asyncio.Event()
        self._batch = asyncio.Event()
        # Path -> True when it is a directory whose creation was reported (see is_watching).
        self._seen: OrderedDict[str, bool] = OrderedDict()
        self._start_ns = time.time_ns()
        self._failed = False
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        from watchfiles import Change, awatch

        loop = asyncio.get_running_loop()
        # `awatch` builds its native watcher (walking the tree) synchronously before its first
        # await, so a callback scheduled now runs only once every existing directory is watched.
        loop.call_soon(self._started.set)
        try:
            async for changes in awatch(
                self.root,
                # watchfiles yields once `step` ms pass without a change (the quiet window
                # that ends a burst) or once `debounce` ms pass in all; that cap only bounds
                # how late a never-ending run of changes is reported, so it must not cut a
                # burst whose changes keep coming within the quiet window.
                debounce=max(_MAX_BATCH_MS, 10 * self._debounce_ms),
                step=self._debounce_ms,
                stop_event=self._stop,
                recursive=True,
            ):
                self._record((change == Change.added, path) for change, path in changes)
                self._notify_batch()
                paths = sorted({path for _, path in changes})
                try:
                    await _call(self._on_change, paths)
                except Exception as exc:
                    await self._report(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failed = True
            await self._report(exc)
        finally:
            self._started.set()
            self._notify_batch()

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
        if not self._started.is_set() or self._task.done():
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
    """Watch `root` recursively; call `on_change(paths)` once per debounced burst of changes."""
    return TreeWatch(Path(os.path.abspath(root)), on_change, debounce=debounce, on_error=on_error)
