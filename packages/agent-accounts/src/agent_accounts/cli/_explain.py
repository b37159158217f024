"""`account-cli explain [LABEL] [--json]`: what the refresh journal tells of each login."""

from __future__ import annotations

import sys

from ._exits import EXIT_LOGIN, EXIT_OK, err
from ._output import say_none_found, shown

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
    rows = []
    for profile in profiles:
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
        return EXIT_OK
    if not rows:
        say_none_found()
    for row in rows:
        sys.stdout.write(f"{row['label']}: {row['summary']}\n")
        for line in row["story"]:
            sys.stdout.write(f"  {line}\n")
    return EXIT_OK
