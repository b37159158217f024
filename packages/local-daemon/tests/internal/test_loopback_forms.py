"""Every spelling of a loopback address counts as loopback (the check that lets the credential-free
listener bind it): v4 anywhere in 127/8, v6, bracketed, `localhost` in any case, v4-mapped."""

from __future__ import annotations

import pytest

from local_daemon._listen import is_loopback_host


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST.", "::ffff:127.0.0.1"],
)
def test_loopback_forms_count_as_loopback(host: str) -> None:
    assert is_loopback_host(host)
