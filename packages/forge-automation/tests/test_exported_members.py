from __future__ import annotations

import forge_automation


def test_all_is_sorted_and_resolvable() -> None:
    assert list(forge_automation.__all__) == sorted(forge_automation.__all__)
    for name in forge_automation.__all__:
        assert hasattr(forge_automation, name), name
