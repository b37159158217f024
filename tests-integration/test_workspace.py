from __future__ import annotations

import importlib.metadata


def test_each_package_is_installed_with_its_own_version() -> None:
    versions = {
        name: importlib.metadata.version(name)
        for name in ("agent-accounts", "local-daemon", "forge-automation")
    }
    assert versions["agent-accounts"].startswith("0.3.")
    assert versions["local-daemon"].startswith("0.1.")
    assert versions["forge-automation"].startswith("0.1.")
