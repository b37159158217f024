"""A real full disk for the tests: a small tmpfs mounted for one test, filled to a page count."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PAGE", "fill_leaving", "small_tmpfs"]

PAGE = 4096


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    """Mount a tmpfs of `size` at `where` (we are root); unmount on the way out."""
    where.mkdir(parents=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill_leaving(directory: Path, free_pages: int) -> None:
    """Fill the filesystem of `directory` until exactly `free_pages` pages are free."""
    st = os.statvfs(directory)
    available = st.f_bavail * st.f_frsize
    filler = directory / "filler"
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, available - free_pages * PAGE))
    st = os.statvfs(directory)
    assert st.f_bavail * st.f_frsize == free_pages * PAGE
