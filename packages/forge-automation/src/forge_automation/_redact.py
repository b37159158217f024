"""Cut forge tokens, JWTs, PEM blocks and known secret values out of text, in linear time.

Shapes: `ghs_`, `ghu_`, `gho_`, `ghp_`, `ghr_` tokens, `github_pat_` fine-grained tokens,
three-part JWTs (`eyJ...`), and PEM blocks (an unterminated block is cut to the end). Known
values (`extra`) are cut whole and as any fragment of 8 or more characters, so half a token
printed on one stream is still cut. `redact_split` treats stdout and stderr as one text in both
orders, so a token split across the two streams is cut from both halves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["REDACTED", "exception_reason", "redact_forge_secrets", "redact_split", "secret_spans"]

REDACTED = "[redacted]"
# A fragment of a known secret shorter than this is not worth mangling the text for.
FRAGMENT = 8

# Every alternative starts with a literal, and each repeated class is followed by nothing that can
# fail, so a failed attempt scans only a bounded prefix.
_SHAPES = re.compile(
    r"gh[suopr]_[A-Za-z0-9_]{8,}"
    r"|github_pat_[A-Za-z0-9_]{8,}"
    r"|-----BEGIN [A-Z0-9 ]{1,64}-----.*?(?:-----END [A-Z0-9 ]{1,64}-----|\Z)",
    re.S,
)
# A JWT starts at any `eyJ` (the base64url of `{"`), whatever precedes it: a letter, `_`, `-`, or
# the `n` of an escaped newline. Possessive classes never backtrack; `_jwt_spans` skips the rest
# of a part whose first `eyJ` failed, since every later `eyJ` in it is followed by the same text.
_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]*+\.[A-Za-z0-9_\-]++\.[A-Za-z0-9_\-]*+")
_PART = re.compile(r"[A-Za-z0-9_\-]*+")


def _jwt_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = text.find("eyJ")
    while start >= 0:
        found = _JWT.match(text, start)
        if found is not None:
            spans.append(found.span())
            after = found.end()
        else:
            part = _PART.match(text, start)
            after = part.end() if part is not None else start + 3
        start = text.find("eyJ", max(after, start + 3))
    return spans


def secret_spans(text: str, extra: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Return sorted, merged (start, end) spans of `text` that hold a secret or its shape."""
    spans = [m.span() for m in _SHAPES.finditer(text)]
    spans.extend(_jwt_spans(text))
    for secret in _secrets(extra):
        spans.extend(_literal_spans(text, secret))
    return _merge(spans)


def redact_forge_secrets(text: str, *, extra: Iterable[str] = ()) -> str:
    """Return `text` with tokens, JWTs, PEM blocks and the `extra` values replaced by [redacted]."""
    return _apply(text, secret_spans(text, extra))


def exception_reason(exc: BaseException) -> str:
    """Return `exc`'s message as a reason line: redacted, cut to 300 characters, else its type."""
    return redact_forge_secrets(str(exc))[:300] or type(exc).__name__


def redact_split(first: str, second: str, *, extra: Iterable[str] = ()) -> tuple[str, str]:
    """Redact two streams of one process, cutting a secret split across them from both halves."""
    secrets = _secrets(extra)
    first_spans: list[tuple[int, int]] = []
    second_spans: list[tuple[int, int]] = []
    # Which stream was flushed first is unknown: join them both ways.
    for head, tail, head_spans, tail_spans in (
        (first, second, first_spans, second_spans),
        (second, first, second_spans, first_spans),
    ):
        cut = len(head)
        for start, end in secret_spans(head + tail, secrets):
            if start < cut:
                head_spans.append((start, min(end, cut)))
            if end > cut:
                tail_spans.append((max(start, cut) - cut, end - cut))
    return _apply(first, _merge(first_spans)), _apply(second, _merge(second_spans))


def _secrets(extra: Iterable[str]) -> tuple[str, ...]:
    # Longest first, so a value that contains another is cut whole.
    return tuple(sorted({s for s in extra if s}, key=len, reverse=True))


def _literal_spans(text: str, secret: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = text.find(secret)
    while start >= 0:
        spans.append((start, start + len(secret)))
        start = text.find(secret, start + len(secret))
    if len(secret) <= FRAGMENT or len(text) < FRAGMENT:
        return spans
    # Any FRAGMENT-long window of the secret found in the text: one set lookup per position.
    grams = {secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)}
    run_start = -1
    run_end = -1
    for i in range(len(text) - FRAGMENT + 1):
        if text[i : i + FRAGMENT] in grams:
            if i > run_end:
                if run_start >= 0:
                    spans.append((run_start, run_end))
                run_start = i
            run_end = i + FRAGMENT
    if run_start >= 0:
        spans.append((run_start, run_end))
    return spans


def _merge(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _apply(text: str, spans: Sequence[tuple[int, int]]) -> str:
    if not spans:
        return text
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(REDACTED)
        position = end
    pieces.append(text[position:])
    return "".join(pieces)
