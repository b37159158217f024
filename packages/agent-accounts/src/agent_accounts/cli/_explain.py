"""`account-cli explain [LABEL] [--json]`: what the refresh journal tells of each login."""

from __future__ import annotations

import sys

from ._exits import EXIT_FAILED, EXIT_LOGIN, EXIT_OK, err
from ._output import config_dir_problem, say_none_found, shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import Any

__all__ = ["run"]


def run(options: Namespace) -> int:
    """Run `explain` as parsed."""
    return _explain(options.label, as_json=options.json)


def _explain(label: str | None, *, as_json: bool) -> int:
    import json

    from agent_accounts.io import discover_profiles
    from agent_accounts.io._explain import explain_profile

    profiles = discover_profiles()
    if label is not None:
        profiles = [p for p in profiles if p.label == label]
        if not profiles:
            err(f"no profile labelled {shown(label)!r}")
            return EXIT_LOGIN
    rows: list[dict[str, Any]] = []
    code = EXIT_OK
    for profile in profiles:
        problem = config_dir_problem(str(profile.config_dir))
        if problem is not None:  # never "No journal yet" for a dir that cannot be read
            code = EXIT_FAILED
            rows.append(
                {
                    "label": shown(profile.label),
                    "configDir": shown(str(profile.config_dir)),
                    "verdict": "unknown",
                    "summary": problem[0].upper() + problem[1:] + ".",
                    "story": [],
                    "current": {"status": "unreadable"},
                    "journal": [],
                }
            )
            continue
        found = explain_profile(str(profile.config_dir))
        current = found.current
        if current is None or isinstance(current, str):
            now_held: dict[str, Any] = {"status": current or "missing"}
        else:
            now_held = {"status": "present", "generation": current.gen}
        rows.append(
            {
                "label": shown(profile.label),
                "configDir": shown(str(profile.config_dir)),
                "verdict": found.explanation.verdict,
                "summary": found.explanation.summary,
                "story": list(found.explanation.story),
                "current": now_held,
                "journal": [entry.to_json() for entry in found.entries],
            }
        )
    if as_json:
        sys.stdout.write(json.dumps({"profiles": rows}, indent=2) + "\n")
        return code
    if not rows:
        say_none_found()
    for row in rows:
        sys.stdout.write(f"{row['label']}: {row['summary']}\n")
        for line in row["story"]:
            sys.stdout.write(f"  {line}\n")
    return code
