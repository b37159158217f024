from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from agent_accounts import account_label


@pytest.mark.parametrize(
    ("config_dir", "home", "label"),
    [
        # the default dir (`.agent` under home) is `default`
        ("/home/u/.agent", "/home/u", "default"),
        ("/home/u/.agent/", "/home/u", "default"),
        ("/home/u//.agent", "/home/u/", "default"),
        ("/home/u/x/../.agent", "/home/u", "default"),  # compared as normalised strings
        (Path("/home/u/.agent"), Path("/home/u"), "default"),
        (PurePosixPath("/home/u/.agent"), "/home/u", "default"),
        # otherwise the last path segment without its leading dot
        ("/home/u/.agent-profiles/work", "/home/u", "work"),
        ("/home/u/.agent-profiles/work/", "/home/u", "work"),
        ("/home/u/.agent-profiles/.hidden", "/home/u", "hidden"),
        ("/home/u/.agent-profiles/..twice", "/home/u", ".twice"),  # only one dot goes
        ("/home/u/.agent-profiles/team b", "/home/u", "team b"),
        ("/srv/other/.agent", "/home/u", "agent"),  # a .agent that is not this home's
        ("/home/v/.agent", "/home/u", "agent"),
        ("/home/u/.agent2", "/home/u", "agent2"),
        ("relative/work", "/home/u", "work"),
        # without home (the pure core reads no environment): any dir named .agent is default
        ("/srv/other/.agent", None, "default"),
        ("/home/u/.agent/", None, "default"),
        ("/a/work", None, "work"),
        ("/a/.work", None, "work"),
        ("work", None, "work"),
        ("~/.agent-profiles/x", None, "x"),  # no tilde expansion: a pure string rule
        # two dirs with the same last segment get the same label
        ("/b/work", None, "work"),
        ("/c/.work", "/home/u", "work"),
    ],
)
def test_labels(config_dir: str | os.PathLike[str], home: str | None, label: str) -> None:
    assert account_label(config_dir, home=home) == label


def test_tilde_is_not_expanded_against_home() -> None:
    # "~/.agent" is a relative path whose last segment is `.agent`; with an explicit home it is
    # not that home's default dir, because the pure core never expands `~`.
    assert account_label("~/.agent", home="/home/u") == "agent"
    assert account_label("~/.agent") == "default"


@pytest.mark.parametrize("config_dir", ["/", ".", ""])
def test_a_dir_without_a_name_is_labelled_default(config_dir: str) -> None:
    assert account_label(config_dir) == "default"
