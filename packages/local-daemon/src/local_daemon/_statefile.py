"""The daemon's state files, one layer: parse, write atomically, update under a lock, notice change.

Tokens, sessions, pid and metadata files, attach's lock, and the TLS pair all go through here.
Reading is `_safefile.read_safe_file` (the one gated reader); this module adds what every state
file needs beside it:

- `parse_json_document`: a state file the parser cannot read, however the parser fails (bad
  bytes, bad syntax, nesting too deep for it), is no document: the caller refuses it as it refuses
  any other corrupt file, with its own fixed text.
"""

from __future__ import annotations

import json

__all__ = ["parse_json_document"]


def parse_json_document(data: bytes) -> object | None:
    """Return the JSON value `data` holds, or None when the parser cannot read it at all."""
    try:
        value: object = json.loads(data)
    # Whatever the parser raises (a ValueError for bad syntax or bytes, a RecursionError for
    # nesting too deep, MemoryError) is the file's fault. Nothing is chained: the decoder's
    # error quotes the file's text.
    except Exception:
        return None
    return value
