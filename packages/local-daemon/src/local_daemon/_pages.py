"""The gate's own HTML pages and JSON refusals: headers, style and escaping shared by the login,
signed-out and consent pages (`_gate`, `_oauth_http`).

Every page is `no-store`, sends no referrer, cannot be framed, and runs only the script and style
carrying its per-response nonce.
"""

from __future__ import annotations

import json

from aiohttp import web

__all__ = [
    "STYLE",
    "envelope",
    "html_response",
    "page_headers",
    "script_json",
    "too_many_sign_ins",
]


def envelope(status: int, code: int, message: str, **headers: str) -> web.Response:
    body = {"ok": False, "error": {"code": code, "message": message}}
    return web.json_response(body, status=status, headers={"Cache-Control": "no-store", **headers})


def script_json(value: str) -> str:
    """Return `value` as a JS string literal that cannot end a <script> element or a line."""
    text = json.dumps(value, ensure_ascii=False)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return text


def page_headers(nonce: str) -> dict[str, str]:
    csp = (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    return {
        "Cache-Control": "no-store",
        "Referrer-Policy": "no-referrer",
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
    }


STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}"
    "button{font:inherit;padding:.5rem 1.25rem}#msg{min-height:1.5em}"
)


def html_response(status: int, text: str, nonce: str) -> web.Response:
    return web.Response(
        status=status,
        text=text,
        content_type="text/html",
        charset="utf-8",
        headers=page_headers(nonce),
    )


def too_many_sign_ins(wait: int) -> web.Response:
    """Return the 429 a throttled sign-in gets: when to try again, in words and `Retry-After`."""
    message = f"too many failed sign-ins: try again in {wait} seconds"
    return envelope(429, 75, message, **{"Retry-After": str(wait)})
