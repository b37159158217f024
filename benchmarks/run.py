"""Run every benchmark and write BENCHMARKS.md (filled in as packages land)."""

from __future__ import annotations


def main() -> None:
    """Run the benchmarks."""
    print("no benchmarks yet")


if __name__ == "__main__":
    main()
