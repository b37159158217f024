"""`parallel`: independent blocking reads (gh children, mostly) run side by side in threads.

Threads, not concurrent.futures: its import alone costs a tenth of a gh call, and each call here
spends its time waiting on a child process, not in Python.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["parallel"]


def parallel(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call in its own thread; return their results in order, or raise the first error."""
    import threading

    if not calls:
        return []
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # re-raised in the caller's thread below
            errors[index] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(calls))]
    for thread in threads[1:]:
        thread.start()
    run(0)  # the caller's own thread makes the first call
    for thread in threads[1:]:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
