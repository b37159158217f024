"""Every fenced Python and shell example of the READMEs and the docs pages runs as written.

`readme_examples` holds the rules: a fresh directory and HOME per README, the installed commands
on PATH, servers that say where they listen, console sessions compared line by line, and only
explicit `<!-- not-run: reason -->` skips.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from readme_examples import ROOT, ReadmeRun, collect, console_steps, examples_of_all, readmes
from readme_forge import readme_forge

# Skips are for what cannot run inside the suite (it would upload, or re-run the suite itself);
# each names where the same thing is tested instead. A new skip must raise this on purpose. The
# forge README's gh examples are not skipped: they meet the real gh and a local forge API.
MAX_SKIPS = 7  # 7th: the OAuth sign-in needs a person at the browser (test_oauth.py drives it)


@pytest.mark.slow
@pytest.mark.parametrize("readme", readmes(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_runs_as_written(readme: Path, tmp_path: Path) -> None:
    examples = [example for example in collect(readme) if example.skip is None]
    assert examples, f"{readme} has no runnable example"
    with contextlib.ExitStack() as stack:
        # The forge README's gh examples meet the real gh, logged in to a local forge API.
        env = stack.enter_context(readme_forge()) if "forge-automation" in readme.parts else {}
        run = ReadmeRun(readme, tmp_path, env)
        try:
            for example in examples:
                run.run(example)
        finally:
            run.stop_server()
    assert run.ran == examples


def test_skipped_examples_are_few_and_each_says_why() -> None:
    skipped = [(e.where, e.skip) for e in examples_of_all() if e.skip is not None]
    assert all(reason for _, reason in skipped), skipped
    assert len(skipped) <= MAX_SKIPS, skipped


def test_console_sessions_split_into_commands_and_their_output() -> None:
    session = (
        "$ echo one\n"
        "one\n"
        "$ echo 'two\n"
        "  lines' | cat\n"
        "two\n"
        "  lines\n"
        "$ true \\\n"
        "    && echo three\n"
        "three\n"
    )
    assert console_steps(session) == [
        ("echo one", "one"),
        ("echo 'two\n  lines' | cat", "two\n  lines"),
        ("true \\\n    && echo three", "three"),
    ]
    with pytest.raises(ValueError, match="before the first command"):
        console_steps("output\n$ echo x\n")
