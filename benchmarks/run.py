"""Run every `benchmarks/bench_*.py` in its own process and write BENCHMARKS.md.

Each benchmark prints one JSON object per figure on stdout:
{"name", "value", "unit", "baseline", "baseline_value", "ratio", "target"}; the baseline is measured
in the same run (bare aiohttp, `python -c pass`, one bare `gh api` call), so ratios compare like
with like on whatever machine runs them. PYTHONDONTWRITEBYTECODE is dropped for the benchmarks, as
an installed package runs from its bytecode cache.
"""

from __future__ import annotations

import json
import os
import platform
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


def main() -> int:
    """Run the benchmarks, print each figure, and write the report."""
    only = set(sys.argv[1:])
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or p.stem in only)
    lines = [
        "# Benchmarks",
        "",
        f"Measured by `make bench` on {time.strftime('%Y-%m-%d')}, "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, {platform.machine()}. "
        "Each baseline is measured in the same run.",
        "",
        "| benchmark | figure | value | unit | baseline | baseline value | ratio | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    problems: list[str] = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        rows, problem = _run_one(script)
        for row in rows:
            print("  " + json.dumps(row), flush=True)
            lines.append(
                "| "
                + " | ".join(
                    [script.stem.removeprefix("bench_")]
                    + [
                        _fmt(row.get(k))
                        for k in (
                            "name",
                            "value",
                            "unit",
                            "baseline",
                            "baseline_value",
                            "ratio",
                            "target",
                        )
                    ]
                )
                + " |"
            )
        if problem:
            problems.append(f"- `{script.name}`: {problem}")
            print(f"  problem: {problem}", flush=True)
    if problems:
        lines += ["", "## Problems", "", *problems]
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {REPORT.name}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
