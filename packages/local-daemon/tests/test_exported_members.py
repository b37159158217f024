from __future__ import annotations

import local_daemon


def test_all_is_sorted_and_resolvable() -> None:
    assert list(local_daemon.__all__) == sorted(local_daemon.__all__)
    for name in local_daemon.__all__:
        assert hasattr(local_daemon, name), name
