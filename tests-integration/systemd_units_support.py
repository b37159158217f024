"""Reading systemd unit files in tests (the account-poll units and the daemon units)."""

from __future__ import annotations

from pathlib import Path

Directives = dict[str, dict[str, list[str]]]


def unit_directives(path: Path) -> Directives:
    """Parse a unit file into section -> key -> values (keys may repeat)."""
    sections: Directives = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, line
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def one_directive(sections: Directives, section: str, key: str) -> str:
    """Return the single value of `key` in `section`, failing when it is absent or repeated."""
    values = sections[section][key]
    assert len(values) == 1, (key, values)
    return values[0]
