"""Run every `benchmarks/bench_*.py` in its own process and write BENCHMARKS.md.

Each benchmark prints one JSON object per figure on stdout:
{"name", "value", "unit", "baseline", "baseline_value", "ratio", "target"}; the baseline is measured
in the same run (bare aiohttp, `python -c pass`, one bare `gh api` call), so ratios compare like
with like on whatever machine runs them. PYTHONDONTWRITEBYTECODE is dropped for the benchmarks, as
an installed package runs from its bytecode cache.

`run.py bench_forge_cli bench_squash` runs only the benchmarks named and rewrites only their rows;
every other benchmark's rows stay as they were last measured. The "Runs" table says when and under
what machine load (the load average as the benchmark started and ended: the machine is shared,
and a ratio against a baseline moves with it) each benchmark's rows were measured.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPORT = HERE.parent / "BENCHMARKS.md"
TIMEOUT_S = 600


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _run_one(script: Path) -> tuple[list[dict[str, object]], str | None]:
    # Installed packages run from their bytecode cache, so every benchmark's children may write
    # and use one; with PYTHONDONTWRITEBYTECODE set, each start-up would recompile the sources.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    try:
        proc = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            cwd=HERE.parent,
        )
    except subprocess.TimeoutExpired:
        return [], f"timed out after {TIMEOUT_S} s"
    rows: list[dict[str, object]] = []
    for raw in proc.stdout.splitlines():
        line = raw.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    problem = None
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no stderr"]
        problem = f"exit {proc.returncode}: {tail[0][:200]}"
    return rows, problem


_HEADER = "| benchmark | figure | value | unit | baseline | baseline value | ratio | target |"
_RUNS_HEADER = "| benchmark | measured | Python | load average at start | load average at end |"


def _load() -> str:
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())


def _kept_rows(ran: set[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The figure rows and the run row of each benchmark in the report that is not in `ran`."""
    rows: dict[str, list[str]] = {}
    runs: dict[str, str] = {}
    if not REPORT.exists():
        return rows, runs
    table = None
    text = REPORT.read_text(encoding="utf-8")
    # A report written before the Runs table had one date and Python for all its rows.
    old = re.search(r"Measured by `make bench` on ([0-9-]+), ([^,]+),", text)
    for line in text.splitlines():
        if line in (_HEADER, _RUNS_HEADER):
            table = line
            continue
        if not line.startswith("| ") or line.startswith("|---"):
            if not line.startswith("|"):
                table = None
            continue
        name = line[2:].split(" |", 1)[0]
        if name in ran:
            continue
        if table == _HEADER:
            rows.setdefault(name, []).append(line)
        elif table == _RUNS_HEADER:
            runs[name] = line
    if old is not None:
        for name in rows.keys() - runs.keys():
            runs[name] = f"| {name} | {old[1]} | {old[2]} | not recorded | not recorded |"
    return rows, runs


def main() -> int:
    """Run the benchmarks, print each figure, and write the report."""
    only = set(sys.argv[1:])
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or p.stem in only)
    rows, runs = _kept_rows({p.stem.removeprefix("bench_") for p in scripts})
    python = f"{platform.python_implementation()} {platform.python_version()}"
    problems: list[str] = []
    for script in scripts:
        name = script.stem.removeprefix("bench_")
        print(f"== {script.name}", flush=True)
        started, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), _load()
        found, problem = _run_one(script)
        runs[name] = f"| {name} | {started} | {python} | {load} | {_load()} |"
        rows[name] = []
        for row in found:
            print("  " + json.dumps(row), flush=True)
            cells = [name] + [
                _fmt(row.get(k))
                for k in ("name", "value", "unit", "baseline", "baseline_value", "ratio", "target")
            ]
            rows[name].append("| " + " | ".join(cells) + " |")
        if problem:
            problems.append(f"- `{script.name}`: {problem}")
            print(f"  problem: {problem}", flush=True)
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`benchmarks/run.py`), {os.cpu_count()} cores, "
        f"{platform.machine()}. Each baseline is measured in the same run; the Runs table "
        "says when each benchmark ran and under what load.",
        "",
        _HEADER,
        "|---|---|---|---|---|---|---|---|",
        *(line for name in sorted(rows) for line in rows[name]),
        "",
        "## Runs",
        "",
        _RUNS_HEADER,
        "|---|---|---|---|---|",
        *(runs[name] for name in sorted(runs)),
    ]
    if problems:
        lines += ["", "## Problems", "", *problems]
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {REPORT.name}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
