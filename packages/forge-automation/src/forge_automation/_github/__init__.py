"""GitHub's side of the wire, without I/O: what to ask and how to read the answer.

The sans-I/O core of the package's one door to GitHub (gidgethub's `sansio` split): it builds
requests and reads answers, and never runs `gh`, opens a socket or reads a clock of its own.
`_gh` is the thin adapter that runs `gh` and hands back status, headers and body; the wire
(`_gh_wire.GhCliWire`, built by `gh_cli_wire`) joins the two, the port (`ForgePort`) validates
around the wire, and rule loading stays policy in `_rules`.

- `graphql`: every GraphQL document the package sends, built from shared fragments (the review
  selection is written once);
- `rest`: every REST request the package sends (`RestRequest`, one builder per operation);
  `headers`: the API version and media type every request carries;
- parsers, one per wire format and concept: `pulls`, `checks`, `reviews`, `threads`,
  `protection`, `snapshot` (pr-status's one GraphQL answer), over `shape`'s field checks;
- `failures`: the one failure mapper (status, headers, body or GraphQL `errors` to ForgeCliError
  with an explicit kind; a malformed answer or a page cap is never transient).

This `__init__` imports nothing: forge-cli pr-status loads `graphql` and `snapshot` before
anything else.
"""
