"""The one window a refresh cannot close: from the token answer's last byte to the synced temp file.

A real `account-cli poll --write --refresh` against a local rotating token server, traced by
`strace -f --seccomp-bpf -ttt -T` on only the calls that bound the window (the socket read of the
answer, the temp file's pwrite and fsync) and the lock steps. A kill -9 inside the window loses
the login (the old refresh token is spent, the new one is nowhere on disk); the README names it.

Figures (median of RUNS): the window in ms, against the whole locked section (first lock step to
the final release) measured in the same runs. Prints one JSON line per figure.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "packages" / "agent-accounts" / "tests")
)

from accounts_crash_support import new_scene, run_cli, strace

RUNS = 15
_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+) ([a-z0-9_]+)\((.*)\)\s+= (-?\d+|\?).*<(\d+\.\d+)>$")


def _emit(**row: object) -> None:
    print(json.dumps(row), flush=True)


def _window(log: str) -> tuple[float, float]:
    """Return (window, locked section) in seconds from one trace."""
    calls = []
    for line in log.splitlines():
        match = _LINE.match(line)
        if match:
            _, start, name, args, ret, took = match.groups()
            end = float(start) + float(took)
            calls.append((float(start), end, name, args, int(ret) if ret != "?" else -1))
    write = next(i for i, c in enumerate(calls) if c[2] == "pwrite64")
    answer_end = max(c[1] for c in calls[:write] if c[2] == "recvfrom" and c[4] > 0)
    synced = next(c[1] for c in calls[write:] if c[2] == "fsync")
    locks = [c for c in calls if ".oauth_refresh.lock" in c[3]]
    return synced - answer_end, locks[-1][1] - locks[0][0]


async def main() -> None:
    """Measure the window RUNS times and print the medians."""
    windows, sections = [], []
    for index in range(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            scene = await new_scene(Path(tmp))
            log = Path(tmp) / "trace"
            try:
                code = await run_cli(
                    scene,
                    [
                        strace(),
                        "-f",
                        "--seccomp-bpf",
                        "-qq",
                        "-ttt",
                        "-T",
                        "-e",
                        "signal=none",
                        "-e",
                        "trace=recvfrom,pwrite64,fsync,mkdir,rmdir,rename,renameat2,unlink",
                        "-o",
                        str(log),
                    ],
                )
            finally:
                await scene.server.stop()
            if code != 0:
                raise SystemExit(f"run {index}: exit {code}")
            window, section = _window(log.read_text(errors="replace"))
            windows.append(window)
            sections.append(section)
    window_ms = statistics.median(windows) * 1000
    section_ms = statistics.median(sections) * 1000
    _emit(
        name="refresh: unclosable window, answer's last byte to synced temp file (median)",
        value=round(window_ms, 3),
        unit="ms",
        baseline="whole locked section, first lock step to release (ms)",
        baseline_value=round(section_ms, 2),
        ratio=round(window_ms / section_ms, 4),
        target=f"information (README); max of {RUNS}: {max(windows) * 1000:.3f} ms",
    )


if __name__ == "__main__":
    asyncio.run(main())
