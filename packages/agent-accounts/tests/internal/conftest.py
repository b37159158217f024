"""Fixtures the white-box refresh tests share with the public ones: a profile dir, the mocked token
endpoint (test_refresh) and the rotating local token server (test_locks)."""

from test_locks import server  # noqa: F401 (fixture)
from test_refresh import endpoint, profile  # noqa: F401 (fixtures)
