"""The preflight's reading of a workflow's `on:` for a push to a car branch, row by row from
GitHub's "Filter pattern cheat sheet" and "Using filters" (Workflow syntax for GitHub Actions)."""

from __future__ import annotations

import pytest

from forge_automation._train_preflight import filter_matches, push_fires

CAR = "train/main/0123456789ab"


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("feature/*", ["feature/my-branch", "feature/your-branch"], ["feature/a/b", "feature"]),
        ("feature/**", ["feature/beta-a/my-branch", "feature/mona/the/octocat"], ["features/x"]),
        ("main", ["main"], ["main2", "xmain"]),
        ("*", ["main", "releases"], ["releases/a", "train/main/1"]),
        ("**", ["all/the/branches", "every/tag"], []),
        ("*ms", ["ms", "alms"], ["a/ms", "msx"]),
        ("v2*", ["v2", "v2.0", "v2.9"], ["v1"]),
        ("v[12].[0-9]+.[0-9]+", ["v1.10.1", "v2.0.0"], ["v3.0.0", "v1.x.1"]),
        ("docs/**/*.md", ["docs/a/README.md", "docs/a/b/c.md"], ["docs/README.mdx"]),
        ("a?b", ["b", "ab"], ["aab"]),
        ("train/**", [CAR], ["training/x"]),
        ("\\*", ["*"], ["a"]),
    ],
)
def test_filter_patterns_match_as_github_documents(
    pattern: str, matches: list[str], misses: list[str]
) -> None:
    assert all(filter_matches(pattern, ref) for ref in matches)
    assert not any(filter_matches(pattern, ref) for ref in misses)


@pytest.mark.parametrize(
    ("on", "fires"),
    [
        ("push", True),
        (["pull_request", "push"], True),
        ("pull_request", False),
        ({"push": None}, True),
        ({"push": {"paths": ["src/**"]}}, True),
        ({"push": {"branches": ["main"]}}, False),
        ({"push": {"branches": "train/**"}}, True),
        ({"push": {"branches": ["**", "!train/**"]}}, False),
        ({"push": {"branches": ["train/**", "!train/main/*", "train/main/0*"]}}, True),
        ({"push": {"branches-ignore": ["main"]}}, True),
        ({"push": {"branches-ignore": ["train/*/*"]}}, False),
        ({"push": {"tags": ["v*"]}}, False),
        ({"push": {"branches": ["**"], "branches-ignore": ["x"]}}, False),
        ({"pull_request": {"branches": ["**"]}}, False),
        ({"push": ["main"]}, False),
    ],
)
def test_push_fires_reads_the_on_forms(on: object, fires: bool) -> None:
    assert push_fires(on, CAR)[0] is fires
