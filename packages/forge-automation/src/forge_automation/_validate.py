"""Argument checks run before any call: every value here ends up inside an API path or header."""

from __future__ import annotations

import re

from ._errors import ForgeInputError

__all__ = [
    "validate_branch",
    "validate_etag",
    "validate_label",
    "validate_marker",
    "validate_number",
    "validate_ref",
    "validate_repo",
    "validate_sha",
    "validate_since",
    "validate_text",
]

_OWNER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SINCE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})")
# git check-ref-format's refusals plus `%` (the forge decodes paths, so %2e%2e becomes ..),
# `#` (a URL fragment) and whitespace.
_REF_FORBIDDEN = frozenset("~^:?*[\\ %#\t\n\r")
_MAX_REF_BYTES = 255
_MAX_TEXT = 65536


def _refuse(field: str, message: str) -> ForgeInputError:
    return ForgeInputError(field, message)


def validate_repo(value: object, field: str = "repo") -> str:
    """Return `owner/name` or raise ForgeInputError naming `field`."""
    if not isinstance(value, str):
        raise _refuse(field, "must be a string 'owner/name'")
    owner, sep, name = value.partition("/")
    if not sep or not _OWNER.fullmatch(owner):
        raise _refuse(field, "must be 'owner/name' with a valid owner")
    if not _NAME.fullmatch(name) or name in {".", ".."} or name.startswith("-"):
        raise _refuse(field, "must be 'owner/name' with a valid repository name")
    return value


def validate_branch(value: object, field: str = "branch") -> str:
    """Return a branch name safe to put in an API path, or raise ForgeInputError."""
    if not isinstance(value, str) or not value:
        raise _refuse(field, "must be a non-empty string")
    if len(value.encode("utf-8", "surrogatepass")) > _MAX_REF_BYTES:
        raise _refuse(field, f"longer than {_MAX_REF_BYTES} bytes")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise _refuse(field, "contains a control character")
    bad = _REF_FORBIDDEN.intersection(value)
    if bad:
        raise _refuse(field, f"contains a forbidden character {sorted(bad)[0]!r}")
    if value.startswith("-"):
        raise _refuse(field, "starts with '-'")
    if value == "@" or "@{" in value:
        raise _refuse(field, "contains '@{' or is '@'")
    if ".." in value or "//" in value:
        raise _refuse(field, "contains '..' or '//'")
    if value.startswith("/") or value.endswith(("/", ".")):
        raise _refuse(field, "starts or ends with '/' or ends with '.'")
    for part in value.split("/"):
        if part.startswith(".") or part.endswith(".lock"):
            raise _refuse(field, "has a component starting with '.' or ending with '.lock'")
    return value


def validate_ref(value: object, field: str = "ref") -> str:
    """Return a branch, tag or sha usable as a ref, or raise ForgeInputError."""
    return validate_branch(value, field)


def validate_sha(value: object, field: str = "sha") -> str:
    """Return a full lower-case hex object id, or raise ForgeInputError."""
    if not isinstance(value, str) or not _SHA.fullmatch(value):
        raise _refuse(field, "must be a full lower-case hex object id")
    return value


def validate_number(value: object, field: str = "number") -> int:
    """Return a positive PR number, or raise ForgeInputError."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _refuse(field, "must be a positive integer")
    if value >= 2**31:
        raise _refuse(field, "is too large")
    return value


def validate_since(value: object, field: str = "since") -> str:
    """Return an ISO 8601 timestamp with a zone, or raise ForgeInputError."""
    if not isinstance(value, str) or not _SINCE.fullmatch(value):
        raise _refuse(field, "must be an ISO 8601 timestamp with a zone, like 2024-01-31T12:00:00Z")
    return value


def validate_marker(value: object, field: str = "marker") -> str:
    """Return a one-line, non-blank comment marker, or raise ForgeInputError."""
    if not isinstance(value, str) or not value.strip():
        raise _refuse(field, "must be a non-blank string")
    if value != value.strip() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise _refuse(field, "must be one line without surrounding whitespace")
    if len(value) > 1024:
        raise _refuse(field, "is longer than 1024 characters")
    return value


def validate_text(
    value: object, field: str, *, allow_empty: bool = True, max_len: int = _MAX_TEXT
) -> str:
    """Return a body or title string within the forge's size limit, or raise ForgeInputError."""
    if not isinstance(value, str):
        raise _refuse(field, "must be a string")
    if not allow_empty and not value.strip():
        raise _refuse(field, "must not be blank")
    if len(value) > max_len:
        raise _refuse(field, f"is longer than {max_len} characters")
    if "\x00" in value:
        raise _refuse(field, "contains a NUL character")
    return value


def validate_label(value: object, field: str = "label") -> str:
    """Return a label name safe for a path segment and the issue filter, or raise ForgeInputError.

    The issue listing's `labels` filter splits on commas, so a comma is refused; `.` and `..`
    would be path steps even when quoted.
    """
    if not isinstance(value, str) or not value.strip():
        raise _refuse(field, "must be a non-blank string")
    if len(value) > 100:
        raise _refuse(field, "is longer than 100 characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise _refuse(field, "contains a control character")
    if "," in value:
        raise _refuse(field, "contains ',' (the forge's label filter splits on it)")
    if value in {".", ".."}:
        raise _refuse(field, "must not be '.' or '..'")
    return value


def validate_etag(value: object, field: str = "etag") -> str | None:
    """Return None or an ETag safe to send as a header, or raise ForgeInputError."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value
        or len(value) > 256
        or any(ord(c) < 0x20 or ord(c) > 0x7E for c in value)
    ):
        raise _refuse(field, "must be None or a printable ASCII ETag")
    return value
