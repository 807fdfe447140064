"""What the small timing scripts share: their --sizes / --rounds command line and a
markdown table printed row by row as each size is measured."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence


def sizes_parser(doc: str, sizes: Sequence[int], rounds: int = 3) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first paragraph, with --sizes (cloth N) and
    --rounds (alternating timed rounds)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(sizes),
                        help="cloth sizes N (N x N particles)")
    parser.add_argument("--rounds", type=int, default=rounds, help="alternating rounds")
    return parser


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print a markdown table, each row as soon as ``rows`` yields it."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for cells in rows:
        print("| " + " | ".join(cells) + " |", flush=True)
