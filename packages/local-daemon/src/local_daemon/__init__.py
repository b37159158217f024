"""local_daemon."""

from __future__ import annotations

from ._auth import create_daemon_auth, mint_login_code
from ._files import file_response
from ._remote import RemoteOptions, TlsFiles
from ._static import mount_static_app
from ._tokenfile import ensure_token_file, rotate_token_file

__all__: list[str] = [
    "RemoteOptions",
    "TlsFiles",
    "create_daemon_auth",
    "ensure_token_file",
    "file_response",
    "mint_login_code",
    "mount_static_app",
    "rotate_token_file",
]
