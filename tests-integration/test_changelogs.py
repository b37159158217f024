"""Each package's CHANGELOG in Keep a Changelog 1.1.0 form, the form the root README prescribes.

`## [Unreleased]` on top, then dated releases `## [x.y.z] - YYYY-MM-DD`, newest first, the newest
being the version the package's pyproject declares; each release groups its changes under the six
types, each type at most once. (That the sdist carries the file: tests-integration/test_packaging.py.)
"""

from __future__ import annotations

import datetime
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent-accounts", "local-daemon", "forge-automation")
TYPES = frozenset({"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"})
RELEASE = re.compile(r"## \[(?P<version>\d+\.\d+\.\d+)\] - (?P<date>\d{4}-\d{2}-\d{2})")


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """Split a changelog into its `## ` headings, each with the `### ` headings under it."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line, []))
        elif line.startswith("### "):
            assert sections, f"{line!r} before any release heading"
            sections[-1][1].append(line.removeprefix("### "))
    return sections


@pytest.mark.parametrize("name", PACKAGES)
def test_changelog_has_unreleased_then_dated_releases(name: str) -> None:
    package = ROOT / "packages" / name
    text = (package / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "keepachangelog.com/en/1.1.0" in text
    sections = _sections(text)
    assert sections[0][0] == "## [Unreleased]"
    releases = []
    for heading, _types in sections[1:]:
        match = RELEASE.fullmatch(heading)
        assert match, f"{name}: {heading!r} is not '## [x.y.z] - YYYY-MM-DD'"
        version = tuple(int(part) for part in match["version"].split("."))
        releases.append((version, datetime.date.fromisoformat(match["date"])))
    assert releases, f"{name}: no dated release"
    assert releases == sorted(releases, reverse=True), f"{name}: releases not newest first"
    assert len({version for version, _ in releases}) == len(releases)
    declared = tomllib.loads((package / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert ".".join(map(str, releases[0][0])) == declared["version"]
    for heading, types in sections:
        assert set(types) <= TYPES, f"{name} {heading}: {sorted(set(types) - TYPES)}"
        assert len(types) == len(set(types)), f"{name} {heading}: a type appears twice"
