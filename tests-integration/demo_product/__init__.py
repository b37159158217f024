"""A small product built on the three packages, as a user's product would: public APIs only.

It serves a command registry through `local_daemon` whose commands read account usage through
`agent_accounts.io` and pull-request readiness through `forge_automation`. `make demo` runs it with
embedded defaults (demo profiles in a temporary home, a local usage server, a seeded forge fake);
the integration suite drives the same pieces against the real `gh` and `account-cli`.
"""

from __future__ import annotations
