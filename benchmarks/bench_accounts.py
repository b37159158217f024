"""agent-accounts: the status line's start-up cost and poll_all's concurrency.

1. `account-cli status --statusline` with 5 profiles (each with a login and a reading), median wall
   time of RUNS runs, against `python -c pass` on the same interpreter in the same rounds (they
   run in turn; target: at most 1.6x); the same for the human line, `account-cli statusline`.
   A second figure sets each against `python -c "import argparse, json"` measured in the same
   rounds: the stdlib every command line needs, so the ratio is the package's own share; a third
   is the same comparison in CPU time (the child's user + system, from wait4), which other load
   on a shared machine moves less than wall time.
2. `poll_all` over 50 profiles against a local server (a child process) that answers each request
   after 100 ms: total wall time (target: under 0.5 s; polled one by one it would take 5 s).
3. `account-cli best` over 50 profiles (each with a login and a fresh reading), median wall time
   of RUNS runs, process start included, with `python -c pass` run in turn (target: under 100 ms).
4. `account-cli statusline-tee` fed the 2 KiB status-line payload of tests/data (it writes the
   session reading, fsyncs included, then prints the human status line), median wall time of RUNS
   runs against `python -c pass` fed the same stdin, in turn (target: at most 2x).

Prints one JSON line per figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "packages" / "agent-accounts" / "tests")
)

from accounts_refresh_support import account_cli, credentials, dump, write_file

RUNS = 20
PROFILES = 50
DELAY_S = 0.1
POLL_ROUNDS = 3


def _emit(**row: object) -> None:
    print(json.dumps(row), flush=True)


def _make_profile(config: Path, now: float) -> None:
    config.mkdir(parents=True, mode=0o700)
    doc = credentials(expires_at_ms=int(now * 1000) + 24 * 3_600_000)
    write_file(config / ".credentials.json", dump(doc))
    sessions = config / "status-cache" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    reading = {
        "session_id": "usage-poll",
        "written_at": now - 30,
        "rate_limits": {
            "five_hour": {"used_percentage": 23.5, "resets_at": now + 3600},
            "seven_day": {"used_percentage": 41.5, "resets_at": now + 86400},
        },
    }
    (sessions / "usage-poll.json").write_text(json.dumps(reading))


def _run_timed(argv: list[str], env: dict[str, str], stdin: bytes | None) -> tuple[float, float]:
    """Run one command to its end; return its wall time and its CPU time (user + system)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert child.stdin is not None
    with child.stdin:
        child.stdin.write(stdin or b"")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if child.returncode != 0:
        raise SystemExit(f"{argv} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def _median_runs(
    argvs: list[list[str]], env: dict[str, str], stdin: bytes | None = None
) -> list[tuple[float, float]]:
    """Median wall time and median CPU time of each command, run in turn within each round.

    Interleaved, so load from other processes on a shared machine falls on the baseline and the
    measured command alike instead of on whichever ran while it lasted. CPU time (the child's
    own, from wait4) moves less with that load than wall time does.
    """
    walls: list[list[float]] = [[] for _ in argvs]
    cpus: list[list[float]] = [[] for _ in argvs]
    for index in range(RUNS + 2):
        for argv, wall, cpu in zip(argvs, walls, cpus, strict=True):
            took, used = _run_timed(argv, env, stdin)
            if index >= 2:  # two warm-up rounds fill the page cache and the bytecode cache
                wall.append(took)
                cpu.append(used)
    return [
        (statistics.median(wall), statistics.median(cpu))
        for wall, cpu in zip(walls, cpus, strict=True)
    ]


def _median_walls(
    argvs: list[list[str]], env: dict[str, str], stdin: bytes | None = None
) -> list[float]:
    """Median wall time of each command, run in turn within each round (`_median_runs`)."""
    return [wall for wall, _ in _median_runs(argvs, env, stdin)]


_STDLIB_FLOOR = "import argparse, json"
"""What every command line imports before any of the package's own code runs (issue 24 keeps
argparse and json): its cost is the floor under the status line's ratio to `python -c pass`."""


def bench_statusline(args: tuple[str, ...] = ("status", "--statusline")) -> None:
    """Median wall time of a status line (the spec's pipe rows by default) vs `python -c pass`."""
    now = time.time()
    command = [account_cli(), *args]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _make_profile(home / ".agent", now)
        for name in ("a", "b", "c", "d"):
            _make_profile(home / ".agent-profiles" / name, now)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
        env["HOME"] = str(home)
        # An installed package runs from its bytecode cache; with PYTHONDONTWRITEBYTECODE set
        # (as in some dev shells) a just-edited module would be compiled again on every run.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        out = subprocess.run(
            command, env=env, capture_output=True, text=True, check=True, timeout=60
        ).stdout
        if len(out.splitlines()) != 5 or out.startswith(("unknown", "no usage")):
            raise SystemExit(f"unexpected status line output: {out!r}")
        (baseline, baseline_cpu), (floor, _), (value, cpu) = _median_runs(
            [[sys.executable, "-c", "pass"], [sys.executable, "-c", _STDLIB_FLOOR], command], env
        )
    name = f"account-cli {' '.join(args)}, 5 profiles (median wall)"
    _emit(
        name=name,
        value=round(value, 4),
        unit="s",
        baseline="python -c pass",
        baseline_value=round(baseline, 4),
        ratio=round(value / baseline, 2),
        target="<= 1.6x",
    )
    _emit(
        name=f"{name}, over the stdlib it must import",
        value=round(value, 4),
        unit="s",
        baseline=f"python -c '{_STDLIB_FLOOR}' ({round(floor / baseline, 2)}x python -c pass)",
        baseline_value=round(floor, 4),
        ratio=round(value / floor, 2),
        target="information: the package's own share of the start-up",
    )
    _emit(
        name=f"account-cli {' '.join(args)}, 5 profiles (median CPU time, user + system)",
        value=round(cpu, 4),
        unit="s",
        baseline="python -c pass (CPU time)",
        baseline_value=round(baseline_cpu, 4),
        ratio=round(cpu / baseline_cpu, 2),
        target="information: moves less with other load than the wall figure",
    )


def bench_human_statusline() -> None:
    """Median wall time of the human status line (`account-cli statusline`) vs `python -c pass`."""
    bench_statusline(("statusline",))


async def _serve() -> None:
    from aiohttp import web

    async def usage(request: web.Request) -> web.Response:
        await asyncio.sleep(DELAY_S)
        return web.json_response(
            {
                "five_hour": {"utilization": 23.0, "resets_at": "2030-01-01T00:00:00Z"},
                "seven_day": {"utilization": 41.5, "resets_at": None},
            }
        )

    app = web.Application()
    app.router.add_get("/api/oauth/usage", usage)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=256)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await runner.cleanup()


async def _poll_rounds(url: str, root: Path) -> list[float]:
    from agent_accounts.io import PollOk, Profile, poll_all

    now = time.time()
    profiles = []
    for index in range(PROFILES):
        config = root / f"p{index:02d}"
        config.mkdir(mode=0o700)
        write_file(
            config / ".credentials.json",
            dump(credentials(expires_at_ms=int(now * 1000) + 24 * 3_600_000)),
        )
        profiles.append(Profile(label=f"p{index:02d}", config_dir=str(config)))
    times = []
    for _ in range(POLL_ROUNDS):
        start = time.perf_counter()
        entries = await poll_all(profiles=profiles, api_base=url)
        times.append(time.perf_counter() - start)
        failed = [e.label for e in entries if not isinstance(e.result, PollOk) or e.file is None]
        if failed:
            raise SystemExit(f"poll_all failed for {failed}")
    return times


def bench_poll_all() -> None:
    """Wall time of poll_all over 50 profiles, each answer delayed 100 ms."""
    server = subprocess.Popen(
        [sys.executable, __file__, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with tempfile.TemporaryDirectory() as tmp:
            times = asyncio.run(_poll_rounds(f"http://127.0.0.1:{port}", Path(tmp)))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
    value = statistics.median(times)
    _emit(
        name=f"poll_all over {PROFILES} profiles, server answers after 100 ms (median of "
        f"{POLL_ROUNDS}, writes included)",
        value=round(value, 4),
        unit="s",
        baseline="one answer's server delay",
        baseline_value=DELAY_S,
        ratio=round(value / DELAY_S, 2),
        target="< 0.5 s",
    )


def bench_best() -> None:
    """Median wall time of `account-cli best` over 50 profiles vs `python -c pass`."""
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for index in range(PROFILES):
            _make_profile(home / ".agent-profiles" / f"p{index:02d}", now)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
        env["HOME"] = str(home)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        out = subprocess.run(
            [account_cli(), "best"],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode != 0 or out.stdout != "p00\n":
            raise SystemExit(f"unexpected best output: {out!r}")
        baseline, value = _median_walls(
            [[sys.executable, "-c", "pass"], [account_cli(), "best"]], env
        )
    _emit(
        name=f"account-cli best over {PROFILES} profiles (median wall, process start included)",
        value=round(value, 4),
        unit="s",
        baseline="python -c pass",
        baseline_value=round(baseline, 4),
        ratio=round(value / baseline, 2),
        target="< 0.1 s",
    )


TEE_PAYLOAD = (
    Path(__file__).resolve().parents[1]
    / "packages"
    / "agent-accounts"
    / "tests"
    / "data"
    / "statusline_payload.json"
)


def bench_statusline_tee() -> None:
    """Median wall time of `statusline-tee` on a 2 KiB payload vs `python -c pass`."""
    payload = TEE_PAYLOAD.read_bytes()
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _make_profile(home / ".agent", now)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
        env["HOME"] = str(home)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        done = subprocess.run(
            [account_cli(), "statusline-tee"],
            input=payload,
            env=env,
            capture_output=True,
            check=True,
            timeout=60,
        )
        session = home / ".agent/status-cache/sessions/3f2a9c1e-4b5d-4e6f-8a7b-9c0d1e2f3a4b.json"
        if done.stderr or not done.stdout.startswith(b"5h \x1b[32m23%") or not session.exists():
            raise SystemExit(f"unexpected statusline-tee run: {done!r}")
        baseline, value = _median_walls(
            [[sys.executable, "-c", "pass"], [account_cli(), "statusline-tee"]], env, payload
        )
    _emit(
        name=f"account-cli statusline-tee, {len(payload)} B payload (median wall, session "
        "reading written and the status line printed)",
        value=round(value, 4),
        unit="s",
        baseline="python -c pass",
        baseline_value=round(baseline, 4),
        ratio=round(value / baseline, 2),
        target="<= 2x",
    )


def main() -> None:
    """Run every figure (or only the ones named: statusline, human_statusline, poll_all, best,
    statusline_tee)."""
    benches = {
        "statusline": bench_statusline,
        "human_statusline": bench_human_statusline,
        "poll_all": bench_poll_all,
        "best": bench_best,
        "statusline_tee": bench_statusline_tee,
    }
    for name in sys.argv[1:] or list(benches):
        benches[name]()


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:  # the poll benchmark's server child
        asyncio.run(_serve())
    else:
        main()
