"""A local, stateful fake of GitHub's API for tests: the real `gh` talks to it through HTTP_PROXY.

`gh` treats `github.localhost` as a plain-HTTP development host and sends every call in absolute
form (`GET http://api.github.localhost/repos/...`) to the proxy, which is this aiohttp app on
127.0.0.1:0. It plays the forge's documented REST answers (Link pagination, ETag/304, 403/404/422
bodies, X-RateLimit headers per resource), keeps state so a second call of an idempotent method is
visible as "no new effect", and logs every request.

It is held to GitHub's own descriptions (`schema`): every REST request is checked against the
OpenAPI description (an undocumented path is a 404, an invalid body a 422) and so is the shape of
every answer it sends; every GraphQL document is validated against the published schema and
executed over this state (`graphql`). Whatever GitHub would refuse is recorded in
`state.violations`, and leaving the `with ForgeServer()` block with any fails the test; a test
that sends such a request on purpose takes them with `take_violations()`.

- `state`: repositories (refs, commits, PRs, CI, rules) and the request log;
- `rest`, `rest_checks`: the REST handlers; `answers`: their early answers, errors and pages;
- `graphql`, `graphql_objects`: the GraphQL endpoint and the objects it builds per request;
- `schema`: @octokit/openapi and @octokit/graphql-schema, loaded once, and the checks against them;
- `faults`: review-related reads answered with a fault on the wire; `gh_faults`: a wrapper `gh`
  that answers chosen calls with a fault before any request;
- `server`: `ForgeServer` (a context manager running its own loop in a background thread),
  `gh_env` for the environment a `gh` child needs, `gh_exec` for a GhExec seam that adds it.
"""

from __future__ import annotations

from fakeforge.gh_faults import FAULTS, GhFaults
from fakeforge.server import GH_MARK, ForgeServer, gh_env, gh_exec
from fakeforge.state import (
    USER_TOKEN,
    ForgeState,
    LoggedRequest,
    RepoState,
    ancestors,
    latest_statuses,
    sha_of,
)

__all__ = [
    "FAULTS",
    "GH_MARK",
    "USER_TOKEN",
    "ForgeServer",
    "ForgeState",
    "GhFaults",
    "LoggedRequest",
    "RepoState",
    "ancestors",
    "gh_env",
    "gh_exec",
    "latest_statuses",
    "sha_of",
]
