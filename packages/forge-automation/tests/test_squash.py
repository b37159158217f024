"""format_squash_message: the spec's exact subject and body shape."""

from __future__ import annotations

import pytest

from forge_automation import ForgeInputError, SquashCommit, SquashMessage, format_squash_message


def test_the_spec_shape() -> None:
    message = format_squash_message(
        title="Add retry to the fetcher",
        body="Retries transient errors.\nKeeps the budget.",
        pr_number=42,
        task_ids=["T-17"],
        commits=[
            SquashCommit(subject="Add backoff", body="Wraps the call\nin a bounded loop."),
            SquashCommit(subject="Test the retry", body=""),
        ],
    )
    assert message == SquashMessage(
        subject="Add retry to the fetcher (T-17) (#42)",
        body=(
            "## Summary\n"
            "\n"
            "Retries transient errors.\nKeeps the budget.\n"
            "\n"
            "## Changes\n"
            "\n"
            "- **Add backoff.** Wraps the call in a bounded loop.\n"
            "- **Test the retry.**\n"
            "\n"
            "Refs: T-17, #42"
        ),
    )
    assert message.to_json() == {"subject": message.subject, "body": message.body}


def test_several_task_ids_and_folded_commit_bodies() -> None:
    message = format_squash_message(
        title="Title\nwith a break",
        body="Body",
        pr_number=7,
        task_ids=["A-1", "B-2"],
        commits=[SquashCommit(subject="Fix it.", body="  one\r\n\r\n   two  \n three\n")],
    )
    assert message.subject == "Title with a break (A-1, B-2) (#7)"
    assert "- **Fix it.** one two three" in message.body
    assert message.body.endswith("Refs: A-1, B-2, #7")


def test_no_task_ids_leaves_only_the_pr_number() -> None:
    message = format_squash_message(
        title="T", body="B", pr_number=3, task_ids=[], commits=[SquashCommit(subject="S")]
    )
    assert message.subject == "T (#3)"
    assert message.body.endswith("\n\nRefs: #3")


def test_empty_sections_do_not_leave_stray_blank_lines() -> None:
    message = format_squash_message(title="T", body="", pr_number=3, task_ids=["X"], commits=[])
    assert message.body == "## Summary\n\n## Changes\n\nRefs: X, #3"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"title": 3}, "title"),
        ({"body": None}, "body"),
        ({"pr_number": 0}, "pr_number"),
        ({"pr_number": True}, "pr_number"),
        ({"pr_number": "4"}, "pr_number"),
        ({"task_ids": "T-1"}, "task_ids"),
        ({"task_ids": [1]}, "task_ids"),
        ({"commits": [{"subject": "s", "body": "b"}]}, "commits"),
    ],
)
def test_wrong_types_name_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {
        "title": "T",
        "body": "B",
        "pr_number": 1,
        "task_ids": [],
        "commits": [],
        **kwargs,
    }
    with pytest.raises(ForgeInputError) as caught:
        format_squash_message(**args)  # type: ignore[arg-type]
    assert caught.value.field == field
