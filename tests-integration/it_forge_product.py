"""`local-daemon serve|mcp-stdio it_forge_product:registry`: the demo product over real `gh`.

`gh` reads its own environment (GH_HOST, GH_TOKEN, HTTP_PROXY, GH_CONFIG_DIR), so the child process
reaches whatever forge the caller points it at; IT_FORGE_REPO names the repository.
"""

from __future__ import annotations

import os

from demo_product.product import build_registry
from forge_automation import forge_port, gh_cli_wire
from local_daemon import Registry


def registry() -> Registry:
    """Build the product registry over the real `gh` (factory form for `MODULE:ATTR`)."""
    return build_registry(
        port=forge_port(gh_cli_wire()), repo=os.environ.get("IT_FORGE_REPO", "acme/widgets")
    )
