"""Real processes racing: `account-cli poll --write --refresh` runs and an agent-client writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from accounts_crash_support import JOURNAL_NAME, journal_lines
from accounts_refresh_support import CANARY, run_race


@pytest.mark.slow
async def test_eight_cli_processes_and_a_writer_spend_each_token_once(tmp_path: Path) -> None:
    outcome = await run_race(tmp_path / "home", processes=8, rounds=2)
    # One exchange per rotation: every token the server received was distinct and valid.
    assert outcome.rejected == 0
    assert len(outcome.received) == len(set(outcome.received)) == outcome.exchanges
    assert outcome.exchanges > outcome.writer_refreshes  # the CLI runs did refresh too
    # The file was whole, valid JSON with a refresh token at every sample, and ends usable.
    assert outcome.invalid_samples == 0
    assert outcome.final_refresh_valid
    assert outcome.leftovers == []
    for code, out, err in outcome.outputs:
        assert CANARY not in out
        assert CANARY not in err
        assert "token refresh failed" not in err
        assert code in (0, 2), (code, err)  # 2: a login read caught the writer mid-write
    # The journal the racing processes shared: whole lines only, no token, each token spent once.
    raw = (tmp_path / "home" / ".agent" / JOURNAL_NAME).read_bytes()
    assert CANARY.encode() not in raw
    entries = journal_lines(tmp_path / "home" / ".agent")
    assert None not in entries
    spends = [e["gen"] for e in entries if e is not None and e["event"] == "spend"]
    assert len(spends) == len(set(spends)) == outcome.exchanges - outcome.writer_refreshes
