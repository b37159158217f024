"""Fixtures the white-box refresh tests share with the public ones: the mocked token endpoint
(test_refresh) and the rotating local token server (test_locks); the profile dir is conftest's."""

from test_locks import server  # noqa: F401 (fixture)
from test_refresh import endpoint  # noqa: F401 (fixture)
