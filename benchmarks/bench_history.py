"""agent-accounts: what a full usage history costs `account-cli best` and `account-cli run`.

Three profiles, each with a login, a fresh reading and a full history (`usage-history.jsonl`
just under 1 MiB and its rotated `.1` as large: a week of a poller and sessions, about 7,000
lines each), against the same three profiles with no history, and `python -c pass`, all run in
turn in the same rounds (the order turned every round, so no command always follows another).
The history is measured three times: with the summary `poll --write` stores beside it
(`store_choice_summary`: the parsed lines `best` and `run` weigh, what they read while the
history is as the poll left it; target at most 1.25x its no-history run), with that summary and
5 lines appended since (they read and parse only those lines on top of it, while the file grows
within the summary's frame, `FRAME_BYTES`; target at most 1.25x), and with no summary that holds
(the history grown past the frame since the last poll: they parse the framed history, the
bounded tail and 96 older lines, themselves; shown, no target). On a shared machine
a run's wall time is bimodal (a process that waits for a core takes about 50 ms more, in any
command, the no-history ones too), so a wall-time median lands in either mode. The figure is
each command's CPU time (user + system, from `wait4`, its exec'd command included), median over
the rounds, against its no-history run's; the lower quartile of its wall times is shown beside.

Prints one JSON line per figure.
"""

from __future__ import annotations

import json
import os
import shutil
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
from agent_accounts.io._choice import store_choice_summary
from agent_accounts.io._history import HISTORY_FILE, HISTORY_MAX_BYTES, history_line
from agent_accounts.io._history_summary import FRAME_BYTES

RUNS = 21
LABELS = ("a", "b", "c")


def _emit(**row: object) -> None:
    print(json.dumps(row), flush=True)


def _limits(t: float, step: int, now: float) -> dict[str, object]:
    return {
        "five_hour": {"used_percentage": float(step % 100), "resets_at": t + 3600},
        "seven_day": {"used_percentage": round(step / 90 % 100, 1), "resets_at": now + 86400},
        "seven_day_opus": {"used_percentage": 3.0, "resets_at": now + 86400},
    }


def _history(now: float) -> tuple[bytes, bytes]:
    """A week of lines, newest last, cut into a rotated file and a current one, each < 1 MiB."""
    lines: list[bytes] = []
    for step in range(14_000):
        t = now - 60 - (14_000 - step) * 43
        source = "oauth-usage" if step % 3 else "status-line"
        reading = {
            "session_id": "usage-poll" if source == "oauth-usage" else f"s{step // 50}",
            "written_at": t,
            "rate_limits": _limits(t, step, now),
            "source": source,
        }
        line = history_line(reading)  # type: ignore[arg-type]
        assert line is not None
        lines.append(line)
    current: list[bytes] = []
    size = 0
    while lines and size + len(lines[-1]) < HISTORY_MAX_BYTES:
        size += len(lines[-1])
        current.append(lines.pop())
    rotated: list[bytes] = []
    size = 0
    while lines and size + len(lines[-1]) < HISTORY_MAX_BYTES:
        size += len(lines[-1])
        rotated.append(lines.pop())
    return b"".join(reversed(rotated)), b"".join(reversed(current))


def _appended(history: tuple[bytes, bytes], lines: int) -> tuple[bytes, bytes, bytes]:
    """The history as the poll left it (its current file without its newest `lines` lines, from
    a line on so they stay within its frame) and those lines, appended since."""
    rotated, current = history
    kept = current.splitlines(keepends=True)
    newest = b"".join(kept[-lines:])
    while len(current) // FRAME_BYTES != (len(current) - len(newest)) // FRAME_BYTES:
        current = current[current.index(b"\n") + 1 :]  # without its oldest line: edges shift
    return rotated, current[: len(current) - len(newest)], newest


def _make_profiles(
    home: Path,
    now: float,
    history: tuple[bytes, bytes] | None,
    *,
    summary: bool = False,
    appended: bytes = b"",
) -> None:
    for label in LABELS:
        config = home / ".agent-profiles" / label
        config.mkdir(parents=True, mode=0o700)
        write_file(
            config / ".credentials.json",
            dump(credentials(expires_at_ms=int(now * 1000) + 24 * 3_600_000)),
        )
        sessions = config / "status-cache" / "sessions"
        sessions.mkdir(parents=True, mode=0o700)
        os.chmod(config / "status-cache", 0o700)
        reading = {"session_id": "usage-poll", "written_at": now - 30}
        reading["rate_limits"] = _limits(now - 30, 40 + LABELS.index(label), now)
        write_file(sessions / "usage-poll.json", json.dumps(reading).encode())
        if history is not None:
            write_file(config / "status-cache" / (HISTORY_FILE + ".1"), history[0])
            write_file(config / "status-cache" / HISTORY_FILE, history[1])
        if summary and not store_choice_summary(str(config)):
            raise SystemExit("the history summary could not be stored")
        if appended:
            with (config / "status-cache" / HISTORY_FILE).open("ab") as log:
                log.write(appended)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    env["HOME"] = str(home)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package runs from its bytecode
    return env


def _check(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0 or not done.stdout.startswith("a"):
        raise SystemExit(f"unexpected {argv[1]} run: {done!r}")


def main() -> None:
    """Measure `best` and `run` with and without a full history, and `python -c pass`."""
    now = time.time()
    history = _history(now)
    sizes = [len(part) for part in history]
    lines = sum(part.count(b"\n") for part in history)
    with tempfile.TemporaryDirectory() as tmp:
        full, bare, parse = Path(tmp) / "full", Path(tmp) / "bare", Path(tmp) / "parse"
        grown = Path(tmp) / "grown"
        _make_profiles(full, now, history, summary=True)
        *before, newest = _appended(history, 5)
        _make_profiles(grown, now, (before[0], before[1]), summary=True, appended=newest)
        _make_profiles(parse, now, history)
        _make_profiles(bare, now, None)
        best = [account_cli(), "best"]
        run = [account_cli(), "run", "--", "sh", "-c", 'basename "$AGENT_CONFIG_DIR"']
        commands = {
            "pass": ([sys.executable, "-c", "pass"], _env(bare)),
            "best bare": (best, _env(bare)),
            "best full": (best, _env(full)),
            "best grown": (best, _env(grown)),
            "best parse": (best, _env(parse)),
            "run bare": (run, _env(bare)),
            "run full": (run, _env(full)),
            "run grown": (run, _env(grown)),
            "run parse": (run, _env(parse)),
        }
        for name, (argv, env) in commands.items():
            if name != "pass":
                _check(argv, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        walls: dict[str, list[float]] = {name: [] for name in commands}
        order = list(commands)
        for index in range(RUNS + 2):  # in turn, so load falls on every command alike
            order = order[1:] + order[:1]
            for name in order:
                argv, env = commands[name]
                start = time.perf_counter()
                child = subprocess.Popen(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                _, status, usage = os.wait4(child.pid, 0)
                child.returncode = os.waitstatus_to_exitcode(status)
                if child.returncode != 0:
                    raise SystemExit(f"{name} failed: {child.returncode}")
                if index >= 2:  # warm-up rounds: page cache, bytecode cache
                    walls[name].append(time.perf_counter() - start)
                    times[name].append(usage.ru_utime + usage.ru_stime)
        for made in (full, grown, parse):
            shutil.rmtree(made)
    cpu = {name: statistics.median(own) for name, own in times.items()}
    low = {name: statistics.quantiles(own, n=4)[0] for name, own in walls.items()}
    what = f"{len(LABELS)} profiles, history {sizes[1]} B + rotated {sizes[0]} B ({lines} lines)"
    for name in ("best", "run"):
        bare_s = cpu[f"{name} bare"]
        for kind, how, target in (
            ("full", "and the summary the poll stores", "<= 1.25x"),
            ("grown", "and the summary, 5 lines appended since", "<= 1.25x"),
            ("parse", "and no summary that holds (grown past its frame: parsed)", None),
        ):
            _emit(
                name=f"account-cli {name} with a full usage history {how}, {what} "
                "(median CPU time)",
                value=round(cpu[f"{name} {kind}"], 4),
                unit="s",
                baseline=f"account-cli {name}, the same profiles without history "
                f"({bare_s:.4f} s; python -c pass {cpu['pass']:.4f} s)",
                baseline_value=round(bare_s, 4),
                ratio=round(cpu[f"{name} {kind}"] / bare_s, 2),
                target=target,
                wall_lower_quartile_s=round(low[f"{name} {kind}"], 4),
                wall_ratio=round(low[f"{name} {kind}"] / low[f"{name} bare"], 2),
            )


if __name__ == "__main__":
    main()
