"""local_daemon."""

from __future__ import annotations

from ._files import file_response
from ._static import mount_static_app

__all__: list[str] = [
    "file_response",
    "mount_static_app",
]
