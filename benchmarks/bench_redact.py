"""redact_secrets on hostile input: time at 1 MiB and 2 MiB of each shape, and their ratio.

Linear time means doubling the input about doubles the time (target: ratio <= 2.5); a pattern
that backtracks or rescans would show 4x or worse. Times are process CPU seconds, best of
REPEATS with the two sizes alternating, so a busy machine disturbs them less. The baseline of
each figure is the same shape at 1 MiB, measured in the same run. Prints one JSON line per figure.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from agent_accounts import redact_secrets

MIB = 1 << 20
REPEATS = 5

_LOG_RECORDS = [
    {"msg": "request", "headers": {"authorization": "Bearer Bearer sk-ant-oat01-abc"}},
    {"log": json.dumps({"access_token": "ab.cd", "note": "line\nBearer tok"})},
    {"msg": "Authorization: Token t0k3n; Bot b0t.t0k3n; DPoP eyJa.b"},
    {"msg": 'Authorization: Digest username="u", realm="r", response="abcdef"'},
    {"msg": "password=p@ss]w0rd&next=1 token:\n  abc"},
    {"url": "https://h/cb?state=s&access_token%3Dq1%26x%3D1"},
    {"html": "&quot;access_token&quot;: &quot;h1&quot;"},
    {"msg": "an ordinary line with no secret at all, only words and numbers 12345"},
]
LOG_LINES = "".join(json.dumps(record) + "\n" for record in _LOG_RECORDS)

# name -> builder of a string of at least n characters
SHAPES: dict[str, Callable[[int], str]] = {
    "plain run 'a'*n": lambda n: "a" * n,
    "Bearer + run": lambda n: "Bearer " + "a" * n,
    "'token=' repeated": lambda n: "token=" * (n // 6 + 1),
    "'eyJ' + 'a.' repeated": lambda n: "eyJ" + "a." * (n // 2 + 1),
    "'sk-ant-' repeated": lambda n: "sk-ant-" * (n // 7 + 1),
    "'_sk-' + over-long tag repeated": lambda n: ("_sk-" + "t" * 17) * (n // 21 + 1),
    "'-eyJ' repeated (no dot)": lambda n: "-eyJ" * (n // 4 + 1),
    "'token' + spaces, no separator": lambda n: ("token" + " " * 59) * (n // 64 + 1),
    "31-char runs split by '.'": lambda n: ("b" * 31 + ".") * (n // 32 + 1),
    "unclosed quotes 'password=\"'": lambda n: 'password="' * (n // 10 + 1),
    "'Bearer ' repeated": lambda n: "Bearer " * (n // 7 + 1),
    "'eyJ' repeated": lambda n: "eyJ" * (n // 3 + 1),
    "'eyJa.' repeated": lambda n: "eyJa." * (n // 5 + 1),
    "'token=\"' repeated": lambda n: 'token="' * (n // 7 + 1),
    "prose with short words": lambda n: "the basic token is fine " * (n // 24 + 1),
    # the real-log shapes (issue 14): every new alternative, at its most hostile
    "'Bearer ' + spaces, doubled": lambda n: ("Bearer" + " " * 50) * (n // 56 + 1),
    "'Token ' repeated": lambda n: "Token " * (n // 6 + 1),
    "escaped quotes 'token=\\\"' repeated": lambda n: 'token=\\"' * (n // 8 + 1),
    "unclosed deep quote + runs": lambda n: 'token=\\"' + 'a\\\\\\"' * (n // 6 + 1),
    "backslash run after 'token='": lambda n: "token=\\" + "\\" * n,
    "'token=&quot;' repeated": lambda n: "token=&quot;" * (n // 12 + 1),
    "'%2525' after 'token'": lambda n: "token%" + "25" * (n // 2),
    "Digest list, no '=' after ','": lambda n: 'Digest a="b"' + ", a" * (n // 3 + 1),
    "bare value of ']'": lambda n: "password=a" + "]" * n,
    "'token:' + escaped newlines": lambda n: "token:" + "\\n" * (n // 2),
    "'\\nBearer' repeated": lambda n: "\\nBearer" * (n // 8 + 1),
    # a large regression input: JSON log lines holding every real-log shape
    "JSON log lines, real-log shapes": lambda n: LOG_LINES * (n // len(LOG_LINES) + 1),
}


def _cpu_seconds(text: str) -> float:
    start = time.process_time()
    redact_secrets(text)
    return time.process_time() - start


def _best_pair(small: str, large: str) -> tuple[float, float]:
    # CPU time, not wall time: other processes on a shared machine do not count. The two sizes
    # alternate so that a burst of contention hits both, and the best of each is kept.
    best_small = best_large = float("inf")
    for _ in range(REPEATS):
        best_small = min(best_small, _cpu_seconds(small))
        best_large = min(best_large, _cpu_seconds(large))
    return best_small, best_large


def main() -> None:
    """Time every shape at 1 and 2 MiB and print the figures."""
    for name, build in SHAPES.items():
        one, two = _best_pair(build(MIB)[:MIB], build(2 * MIB)[: 2 * MIB])
        print(
            json.dumps(
                {
                    "name": f"redact 2 MiB: {name}",
                    "value": round(two, 6),
                    "unit": "s",
                    "baseline": "redact 1 MiB",
                    "baseline_value": round(one, 6),
                    "ratio": round(two / one, 3) if one > 0 else None,
                    "target": "<= 2.5",
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
