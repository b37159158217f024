"""A command running in a worker thread reports progress through the call's scope: every report
reaches the sender, in order, before the call's answer."""

from __future__ import annotations

from local_daemon._progress import CallScope, enter_call, leave_call
from progress_support import Seen, progress_registry


async def test_reports_from_a_thread_arrive_in_order_before_the_answer() -> None:
    sent: list[tuple[float, float | None, str | None]] = []

    async def sender(progress: float, total: float | None, message: str | None) -> None:
        sent.append((progress, total, message))

    scope = CallScope(sender)
    token = enter_call(scope)
    try:
        result = await progress_registry(Seen()).invoke_command("thread_steps", {"n": 50}, None)
        await scope.finish()
    finally:
        leave_call(token)
    assert result == 50
    assert sent == [(float(step), 50.0, None) for step in range(1, 51)]
