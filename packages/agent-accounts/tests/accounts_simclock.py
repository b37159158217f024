"""The clock of an `account-cli` subprocess, under the test's hand: a `sitecustomize` on its
PYTHONPATH that reads the time from a file the test writes.

The file holds one little-endian double, the simulated epoch seconds. In the child,
`time.time`, `time.time_ns` and `time.monotonic` (so asyncio's loop clock too) read it, and
`time.sleep` and `asyncio.sleep` (patched when asyncio is first imported) move it forward by
what they were asked to wait and return at once: a `poll --period 150` spreads its requests
over 150 simulated seconds in no real time, and a local server in the test reads the same file
to date each request it receives. The machine is simulated too: `os.uname().nodename` is
`simclock` in every child, so `poll --period`, which hashes the machine's name into each
profile's phase, polls at the same phases on any host. A clock the test never moves is a fixed
one (`SimClock.fixed`). Children that `exec` (`account-cli run`) hand the same clock to the
program they run (the environment carries it).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CLOCK_ENV", "SimClock"]

CLOCK_ENV = "ACCOUNTS_TEST_SIMCLOCK"
_PACK = struct.Struct("<d")

_SITECUSTOMIZE = f'''\
"""Test clock (accounts_simclock.py): time is read from the file named by {CLOCK_ENV}."""
import os as _os

_path = _os.environ.get({CLOCK_ENV!r})
if _path:
    import struct as _struct
    import sys as _sys
    import time as _time

    _fd = _os.open(_path, _os.O_RDWR | _os.O_CLOEXEC)
    _pack = _struct.Struct("<d")

    def _now():
        return _pack.unpack(_os.pread(_fd, 8, 0))[0]

    def _advance(seconds):
        if seconds > 0:
            _os.pwrite(_fd, _pack.pack(_now() + seconds), 0)

    def _sleep(seconds):
        _advance(seconds)

    _time.time = _now
    _time.time_ns = lambda: int(_now() * 1e9)
    _time.monotonic = _now
    _time.sleep = _sleep

    _uname = _os.uname()
    _os.uname = lambda: _os.uname_result((_uname[0], "simclock", *_uname[2:]))

    class _SleepWhenImported:
        """Patch `asyncio.sleep` once asyncio is imported: importing it here would cost
        every child (`account-cli run` among them) most of its start-up."""

        def find_spec(self, name, path=None, target=None):
            if name != "asyncio":
                return None
            _sys.meta_path.remove(self)
            import importlib.util

            spec = importlib.util.find_spec(name)
            exec_module = spec.loader.exec_module

            def _exec(module):
                exec_module(module)
                real_sleep = module.sleep

                async def _async_sleep(delay, result=None):
                    _advance(delay)
                    return await real_sleep(0, result)

                module.sleep = _async_sleep

            spec.loader.exec_module = _exec
            return spec

    _sys.meta_path.insert(0, _SleepWhenImported())
'''


@dataclass(frozen=True)
class SimClock:
    """A simulated clock shared by the test and the children it starts (see the module doc)."""

    path: Path
    site_dir: Path

    @classmethod
    def create(cls, directory: Path, start: float) -> SimClock:
        """Make the clock file and the `sitecustomize` dir under `directory`, set to `start`."""
        site_dir = directory / "simclock"
        site_dir.mkdir(parents=True)
        (site_dir / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        clock = cls(path=site_dir / "now", site_dir=site_dir)
        clock.path.write_bytes(_PACK.pack(start))
        return clock

    fixed = create  # a clock the test never moves is a fixed one

    def now(self) -> float:
        """The simulated time (moved by the children's sleeps too)."""
        return float(_PACK.unpack(self.path.read_bytes())[0])

    def advance_to(self, when: float) -> float:
        """Move the clock to `when`, never back; return the time it shows."""
        current = self.now()
        if when > current:
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.pwrite(fd, _PACK.pack(when), 0)
            finally:
                os.close(fd)
            return when
        return current

    def env(self) -> dict[str, str]:
        """The environment entries that put a child on this clock (PYTHONPATH replaced)."""
        return {"PYTHONPATH": str(self.site_dir), CLOCK_ENV: str(self.path)}
