"""A registry module that sets up root logging at INFO on import, as many applications do."""

from __future__ import annotations

import logging

from daemon_support import demo_registry

logging.basicConfig(level=logging.INFO)

registry = demo_registry()
