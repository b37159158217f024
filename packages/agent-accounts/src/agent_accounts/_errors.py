"""Errors raised by the account library. No error ever carries a token.

AccountsError
└── RedactedError   a redacted exception whose own type could not be rebuilt
"""

from __future__ import annotations

__all__ = ["AccountsError", "RedactedError"]


class AccountsError(Exception):
    """Root of every error the account library defines."""


class RedactedError(AccountsError):
    """A redacted copy of an exception whose own type could not be rebuilt from one message."""

    def __init__(self, message: str, *, original_type: str = "Exception") -> None:
        super().__init__(message)
        self.original_type = original_type
