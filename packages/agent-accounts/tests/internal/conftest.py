"""The rotating local token server the white-box refresh tests share with test_locks (shadowing
conftest's usage server here); the mocked token endpoint and the profile dir are conftest's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from accounts_locks_support import due_token_server
from accounts_refresh_support import TokenServer


@pytest.fixture
async def server() -> AsyncIterator[TokenServer]:
    """A local token server whose tokens are due again at once."""
    async with due_token_server() as running:
        yield running
