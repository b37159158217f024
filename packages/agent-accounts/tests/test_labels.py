from __future__ import annotations

from pathlib import Path

import pytest

from agent_accounts import account_label


@pytest.mark.parametrize(
    ("config_dir", "home", "label"),
    [
        ("/home/u/.agent", "/home/u", "default"),
        ("/home/u/.agent/", "/home/u", "default"),
        ("/home/u/.agent-profiles/work", "/home/u", "work"),
        ("/home/u/.agent-profiles/.hidden", "/home/u", "hidden"),
        ("/srv/other/.agent", "/home/u", "agent"),  # a .agent that is not the home's default dir
        ("/srv/other/.agent", None, "default"),
        ("/a/work", None, "work"),
        ("/b/work", None, "work"),  # same last segment, same label
        (Path("/home/u/.agent"), Path("/home/u"), "default"),
    ],
)
def test_labels(config_dir: str, home: str | None, label: str) -> None:
    assert account_label(config_dir, home=home) == label
