"""The refresh's test seam as the tests spell it (accounts_refresh_support) is the one in
`io._pause`: a renamed step or variable would leave the crash tests pausing nowhere."""

from __future__ import annotations

import accounts_refresh_support as support
from agent_accounts.io import _pause


def test_the_tests_name_the_seam_the_refresh_reads() -> None:
    assert support.PAUSE_ENV == _pause.PAUSE_ENV
    assert support.PAUSE_STEPS == _pause.PAUSE_STEPS
