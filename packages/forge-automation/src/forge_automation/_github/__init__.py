"""GitHub's side of the wire, without I/O: what to ask and how to read the answer.

The sans-I/O core of the package's one door to GitHub (gidgethub's `sansio` split): it builds
requests and reads answers, and never runs `gh`, opens a socket or reads a clock of its own.
`_gh` is the thin adapter that runs `gh` and hands back status, headers and body; the wire
(`_wire.gh_cli_wire`) joins the two, and the port (`_port.ForgePort`) validates around the wire.

- `graphql`: every GraphQL document the package sends, built from shared fragments (the review
  selection is written once);
- `rest`: every REST path and request the package sends.

This `__init__` imports nothing: forge-cli pr-status loads `graphql` before anything else.
"""
