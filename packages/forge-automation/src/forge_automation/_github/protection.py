"""Reading a branch's classic protection: GitHub's two 404s told apart, then the rules.

`GET /repos/{owner}/{repo}/branches/{branch}/protection` answers 404 `Branch not protected` when
there is none and 404 `Not Found` to every caller without admin rights. Shared by the wire and
pr-status's own read of it; imports only `shape`, `failures`, `_records` and `_errors`, so
pr-status reads it without loading the wire.
"""

from __future__ import annotations

from .._errors import ProtectionHidden
from .._records import ClassicProtection, RequiredChecks, RequiredContext, ReviewRules
from . import shape
from .failures import parsed

__all__ = [
    "NOT_PROTECTED",
    "PROTECTION_HIDDEN",
    "classic_protection_of",
    "protection_hidden",
]

# GitHub's two 404 bodies on a branch's protection: the branch has none, or the caller may not
# see it (every caller without admin rights; GitHub hides what it will not show).
NOT_PROTECTED = "Branch not protected"
PROTECTION_HIDDEN = "cannot read branch protection"


def protection_hidden(repo: str, branch: str) -> ProtectionHidden:
    """Return the failure of a protection read GitHub answered 404 `Not Found`."""
    return ProtectionHidden(
        f"{PROTECTION_HIDDEN} of {repo}:{branch}: 404 Not Found, GitHub's answer to callers "
        "without admin rights; give the token admin (apps, fine-grained tokens: Administration: "
        "read), else only GitHub's reviewDecision judges reviews",
        repo=repo,
        branch=branch,
    )


def _message(value: object) -> str:
    return shape.as_str(shape.as_obj(value)["message"])


def _classic_protection_from_json(value: object) -> ClassicProtection:
    data = shape.as_obj(value)
    checks = data.get("required_status_checks")
    return ClassicProtection(
        checks=RequiredChecks() if checks is None else _classic_from_json(checks),
        reviews=_classic_reviews_from_json(data),
    )


def _classic_from_json(value: object) -> RequiredChecks:
    data = shape.as_obj(value)
    # GitHub's description requires both lists: one left out is malformed, never "none".
    checks = shape.as_list(data["checks"])
    names = shape.as_list(data["contexts"])
    if checks:
        contexts = tuple(
            RequiredContext(
                context=shape.as_str(shape.as_obj(c)["context"]),
                app_id=shape.app_id(shape.as_obj(c).get("app_id")),
            )
            for c in checks
        )
    else:
        contexts = tuple(RequiredContext(context=shape.as_str(c)) for c in names)
    return RequiredChecks(contexts=contexts, strict=shape.as_bool(data.get("strict", False)))


def _classic_reviews_from_json(value: object) -> ReviewRules:
    data = shape.as_obj(value)
    resolution = shape.as_bool(
        shape.opt_obj(data.get("required_conversation_resolution")).get("enabled", False)
    )
    reviews = data.get("required_pull_request_reviews")
    if reviews is None:
        return ReviewRules(required_review_thread_resolution=resolution, source="classic")
    rule = shape.as_obj(reviews)
    return ReviewRules(
        # Present whenever reviews are required; read as one if a forge ever leaves it out.
        required_approving_review_count=shape.as_int(
            rule.get("required_approving_review_count", 1)
        ),
        # Required by GitHub's description, like `dismiss_stale_reviews`: never defaulted.
        require_code_owner_review=shape.as_bool(rule["require_code_owner_reviews"]),
        require_last_push_approval=shape.as_bool(rule.get("require_last_push_approval", False)),
        dismiss_stale_reviews_on_push=shape.as_bool(rule["dismiss_stale_reviews"]),
        required_review_thread_resolution=resolution,
        source="classic",
    )


def classic_protection_of(
    status: int, data: object, repo: str, branch: str
) -> ClassicProtection | None:
    """Return the protection a 200 or 404 answer (`data`, its JSON body) holds: None for
    `Branch not protected`.

    GitHub's other 404 (`Not Found`) raises ProtectionHidden; a body of another shape raises
    ForgeCliError kind `malformed`.
    """
    if status == 404:
        if parsed("branch protection", data, _message) == NOT_PROTECTED:
            return None
        raise protection_hidden(repo, branch)
    return parsed("branch protection", data, _classic_protection_from_json)
