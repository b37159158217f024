"""`account-cli history [LABEL] [--window W] [--since T] [--json]`: stored readings and forecasts.

Reads each profile's usage history (`io._history`, local files only, no request) since T
(default: the last 24 hours). On a terminal each window is one sparkline with its use now and
its forecast; otherwise a compact table, one row per reading, then the forecasts. `--json`
prints every reading and each window's forecast.
"""

from __future__ import annotations

import sys

from ._exits import EXIT_FAILED, EXIT_LOGIN, EXIT_OK, err
from ._output import iso, percent, say_none_found, shown, window_order

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence
    from typing import Any, Final

    from agent_accounts import UsageReading, WindowForecast

__all__ = ["DEFAULT_SINCE_S", "SPARK_WIDTH", "run", "sparkline"]

DEFAULT_SINCE_S: Final = 24 * 3600
SPARK_WIDTH: Final = 48
_BARS: Final = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH) -> str:
    """Draw percentages (0..100) as at most `width` bars, each the highest of its share."""
    if not values:
        return ""
    buckets = min(width, len(values))
    bars = []
    for b in range(buckets):
        part = values[b * len(values) // buckets : (b + 1) * len(values) // buckets]
        top = min(max(*part, 0.0), 100.0)
        bars.append(_BARS[min(len(_BARS) - 1, int(top / 100 * len(_BARS)))])
    return "".join(bars)


def run(options: Namespace) -> int:
    """Run `history` as parsed."""
    import time

    from agent_accounts import window_forecast
    from agent_accounts.io import discover_profiles, read_usage_history

    now = time.time()
    since = options.since if options.since is not None else now - DEFAULT_SINCE_S
    profiles = discover_profiles()
    if options.label is not None:
        profiles = [p for p in profiles if p.label == options.label]
        if not profiles:
            err(f"no profile labelled {shown(options.label)!r}")
            return EXIT_LOGIN
    code = EXIT_OK
    rows: list[dict[str, Any]] = []
    for profile in profiles:
        label = shown(profile.label)
        try:
            # The forecast rests on the whole current window, not only what is shown.
            everything = read_usage_history(profile.config_dir, now=now)
        except OSError:
            err(f"{label}: history unreadable")
            code = EXIT_FAILED
            continue
        shown_readings = [r for r in everything if r["written_at"] >= since]
        names = sorted({n for r in everything for n in r["rate_limits"]}, key=window_order)
        if options.window is not None:
            names = [n for n in names if n == options.window]
        forecasts = {n: window_forecast(n, everything, now) for n in names}
        rows.append(
            {
                "label": label,
                "configDir": shown(str(profile.config_dir)),
                "readings": shown_readings,
                "windows": names,
                "forecast": forecasts,
            }
        )
    if options.json:
        _print_json(rows)
    else:
        if not profiles:
            say_none_found()
        terminal = sys.stdout.isatty()
        for row in rows:
            (_print_sparklines if terminal else _print_table)(row)
    return code


def _print_json(rows: list[dict[str, Any]]) -> None:
    import json

    doc = {
        "profiles": [
            {
                "label": row["label"],
                "configDir": row["configDir"],
                "readings": [
                    {
                        "written_at": r["written_at"],
                        "source": r.get("source"),
                        "rate_limits": {
                            n: w for n, w in r["rate_limits"].items() if n in row["windows"]
                        },
                    }
                    for r in row["readings"]
                ],
                "forecast": {
                    n: None if f is None else f.to_json() for n, f in row["forecast"].items()
                },
            }
            for row in rows
        ]
    }
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _forecast_text(found: WindowForecast | None) -> str:
    if found is None:
        return "no forecast (too few readings of this window)"
    if found.full_at is None:
        text = f"not full before its reset at {found.rate_per_hour:.2g}%/h"
        if found.earliest is not None:
            text += f" (at the recent pace: {iso(found.earliest)})"
        return text
    low = "?" if found.earliest is None else iso(found.earliest)
    high = "after the reset" if found.latest is None else iso(found.latest)
    return f"full at {iso(found.full_at)} ({low} .. {high})"


def _latest(readings: Sequence[UsageReading], name: str) -> float | None:
    for reading in reversed(readings):
        if name in reading["rate_limits"]:
            return reading["rate_limits"][name]["used_percentage"]
    return None


def _print_sparklines(row: dict[str, Any]) -> None:
    readings = row["readings"]
    sys.stdout.write(f"{row['label']}: {len(readings)} reading(s)\n")
    width = max(len(n) for n in row["windows"]) if row["windows"] else 0
    for name in row["windows"]:
        values = [
            r["rate_limits"][name]["used_percentage"] for r in readings if name in r["rate_limits"]
        ]
        latest = _latest(readings, name)
        now_text = "" if latest is None else f" {percent(latest)} now;"
        forecast = _forecast_text(row["forecast"][name])
        sys.stdout.write(f"  {name:<{width}} {sparkline(values)}{now_text} {forecast}\n")


def _print_table(row: dict[str, Any]) -> None:
    readings = row["readings"]
    names = row["windows"]
    sys.stdout.write(f"{row['label']}: {len(readings)} reading(s)\n")
    if readings:
        widths = [max(len(n), 5) for n in names]
        head = "  ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
        sys.stdout.write(f"  {'time':<20}  {head}  source\n")
        for reading in readings:
            cells = []
            for name, w in zip(names, widths, strict=True):
                window = reading["rate_limits"].get(name)
                cell = "-" if window is None else percent(window["used_percentage"])
                cells.append(f"{cell:>{w}}")
            source = shown(reading.get("source", "-"))
            sys.stdout.write(f"  {iso(reading['written_at']):<20}  {'  '.join(cells)}  {source}\n")
    for name in names:
        sys.stdout.write(f"  {name}: {_forecast_text(row['forecast'][name])}\n")
