"""Plain values from untrusted input: exact `int`/`float`/`str` copies, never a caller's subclass.

A subclass can override `__eq__`, `__str__` or `__repr__`, so a value that passed a check could
render differently later; each accepted value is copied to its exact built-in type once, here.
"""

from __future__ import annotations

import math

__all__ = ["plain_number", "plain_text"]


def plain_number(value: object) -> int | float | None:
    """Return a finite number as an exact int or float; None for bool, NaN, infinities or others."""
    # bool is an int subclass; a JSON `true` is never a number here.
    if isinstance(value, bool):
        return None
    try:
        if isinstance(value, int):
            number: int | float = int.__int__(value)
            return number if math.isfinite(float(number)) else None
        if isinstance(value, float):
            number = float.__float__(value)
            return number if math.isfinite(number) else None
    except OverflowError:  # an int too large for a float is no usable time or percentage
        return None
    return None


def plain_text(value: object) -> str | None:
    """Return a string as an exact str; None for anything else."""
    return str.__str__(value) if isinstance(value, str) else None
