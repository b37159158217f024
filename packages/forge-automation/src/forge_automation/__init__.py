"""forge_automation."""

from __future__ import annotations

__all__: list[str] = []
