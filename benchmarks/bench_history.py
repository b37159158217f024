"""agent-accounts: what a full usage history costs `account-cli best` and `account-cli run`.

Three profiles, each with a login, a fresh reading and a full history (`usage-history.jsonl`
just under 1 MiB and its rotated `.1` as large: a week of a poller and sessions, about 7,000
lines each), against the same three profiles with no history, and `python -c pass`, all run in
turn in the same rounds. Each command's median wall time (process start included) is compared
with its own no-history run: target at most 1.25x, since `best` and `run` parse only a bounded
tail of the history and 96 older lines (`read_usage_history(tail_bytes=..., older_lines=...)`)
whatever its size.

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
from agent_accounts.io._history import HISTORY_FILE, HISTORY_MAX_BYTES, history_line

RUNS = 15
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


def _make_profiles(home: Path, now: float, history: tuple[bytes, bytes] | None) -> None:
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
        full, bare = Path(tmp) / "full", Path(tmp) / "bare"
        _make_profiles(full, now, history)
        _make_profiles(bare, now, None)
        best = [account_cli(), "best"]
        run = [account_cli(), "run", "--", "sh", "-c", 'basename "$AGENT_CONFIG_DIR"']
        commands = [
            ([sys.executable, "-c", "pass"], _env(bare)),
            (best, _env(bare)),
            (best, _env(full)),
            (run, _env(bare)),
            (run, _env(full)),
        ]
        for argv, env in commands[1:]:
            _check(argv, env)
        times: list[list[float]] = [[] for _ in commands]
        for index in range(RUNS + 2):  # in turn, so load falls on every command alike
            for (argv, env), own in zip(commands, times, strict=True):
                start = time.perf_counter()
                subprocess.run(
                    argv,
                    env=env,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=60,
                )
                if index >= 2:  # warm-up rounds: page cache, bytecode cache
                    own.append(time.perf_counter() - start)
        shutil.rmtree(full)
    pass_s, best_bare, best_full, run_bare, run_full = (statistics.median(t) for t in times)
    what = f"{len(LABELS)} profiles, history {sizes[1]} B + rotated {sizes[0]} B ({lines} lines)"
    for name, bare_s, full_s in (("best", best_bare, best_full), ("run", run_bare, run_full)):
        _emit(
            name=f"account-cli {name} with a full usage history, {what} (median wall)",
            value=round(full_s, 4),
            unit="s",
            baseline=f"account-cli {name}, the same profiles without history "
            f"({bare_s:.4f} s; python -c pass {pass_s:.4f} s)",
            baseline_value=round(bare_s, 4),
            ratio=round(full_s / bare_s, 2),
            target="<= 1.25x",
        )


if __name__ == "__main__":
    main()
