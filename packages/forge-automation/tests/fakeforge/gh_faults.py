"""A wrapper `gh` in front of the real one that answers chosen calls with a fault instead.

`GhFaults(dir)` writes an executable `gh` into `dir`; put `dir` first on PATH (`env()`). Each rule
(`add(pattern, fault)`) matches a call whose argv holds `pattern` in any argument; the first rule
that matches answers, every other call runs the real gh. A rule added with `once=True` answers one
call only. Faults print what gh prints for them (`gh api -i`: status line, headers, body):

- `exit1`: no answer at all, as when gh cannot connect;
- `hang`: the child never ends (it becomes `sleep`, so killing it leaves no orphan on the pipes);
- `empty200`: a 200 with an empty body; `truncated`: a 200 whose JSON is cut short;
- `502`: a bad gateway; `secondary`: a 403 secondary rate limit with `Retry-After: 1`;
- `freeplan`: the forge's free-plan 403.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["FAULTS", "GhFaults"]

FAULTS = ("exit1", "hang", "empty200", "truncated", "502", "secondary", "freeplan")

_SCRIPT = r"""#!/bin/bash
# Written by tests/fakeforge/gh_faults.py: answer matching calls with a fault, run the real gh otherwise.
rules="$GH_FAULTS_RULES"
n=0
if [ -f "$rules" ]; then
  while IFS=$'\t' read -r pattern fault once; do
    n=$((n + 1))
    [ -n "$pattern" ] || continue
    hit=""
    for arg in "$@"; do
      case "$arg" in *"$pattern"*) hit=1; break;; esac
    done
    [ -n "$hit" ] || continue
    if [ "$once" = "once" ]; then
      mkdir "$rules.used.$n" 2>/dev/null || continue
    fi
    echo "$fault $*" >> "$rules.log"
    case "$fault" in
      exit1) echo "error connecting to api.github.localhost" >&2; exit 1;;
      hang) exec sleep 3600;;
      empty200) printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n'; exit 0;;
      truncated) printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"number": 1, "state": "op'; exit 0;;
      502) printf 'HTTP/1.1 502 Bad Gateway\r\nRetry-After: 0\r\nContent-Type: application/json\r\n\r\n{"message": "Server Error"}'; echo "gh: Server Error (HTTP 502)" >&2; exit 1;;
      secondary) printf 'HTTP/1.1 403 Forbidden\r\nRetry-After: 1\r\nX-RateLimit-Remaining: 4000\r\nContent-Type: application/json\r\n\r\n{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}'; echo "gh: You have exceeded a secondary rate limit (HTTP 403)" >&2; exit 1;;
      freeplan) printf 'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n\r\n{"message": "Upgrade to GitHub Pro or make this repository public to enable this feature."}'; echo "gh: Upgrade to GitHub Pro (HTTP 403)" >&2; exit 1;;
    esac
  done < "$rules"
fi
exec "$GH_FAULTS_REAL" "$@"
"""


class GhFaults:
    """A directory holding the wrapper `gh` and its rules file."""

    def __init__(self, directory: Path) -> None:
        real = shutil.which("gh")
        if real is None:
            raise RuntimeError("gh is not on PATH (make setup installs it)")
        self.real = real
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.rules = self.dir / "rules.tsv"
        self.rules.write_text("")
        wrapper = self.dir / "gh"
        wrapper.write_text(_SCRIPT)
        wrapper.chmod(0o755)

    def add(self, pattern: str, fault: str, *, once: bool = False) -> None:
        """Answer calls whose argv holds `pattern` with `fault` (one call only when `once`)."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}")
        with self.rules.open("a") as rules:
            rules.write(f"{pattern}\t{fault}\t{'once' if once else 'always'}\n")

    def hits(self) -> list[str]:
        """Return one line per call a rule answered: the fault, then gh's argv."""
        log = Path(f"{self.rules}.log")
        return log.read_text().splitlines() if log.exists() else []

    def env(self) -> dict[str, str]:
        """Return PATH with the wrapper first, and where it finds its rules and the real gh."""
        return {
            "PATH": f"{self.dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "GH_FAULTS_RULES": str(self.rules),
            "GH_FAULTS_REAL": self.real,
        }
