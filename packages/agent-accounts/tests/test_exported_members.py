from __future__ import annotations

import agent_accounts


def test_all_is_sorted_and_resolvable() -> None:
    assert list(agent_accounts.__all__) == sorted(agent_accounts.__all__)
    for name in agent_accounts.__all__:
        assert hasattr(agent_accounts, name), name
