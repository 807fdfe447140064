"""Merging a freshly generated performance report into the page it replaces.

``benchmarks/run.py --write FILE`` generates some sections of docs/performance.md; other
sections are written by hand (or by other benchmarks) and must survive a regeneration.
A page is a preamble (everything before the first heading) and a flat list of sections,
each starting at a ``## `` or ``### `` heading outside fenced code blocks. The merge:

- a section the run generated replaces the page's section of the same title, in its place;
- every other section (hand-written, or one run.py can generate but did not this time)
  stays, in its place, with a ``### `` subsection staying under its ``## `` section;
- a generated section the page lacks goes after the generated sections that come before it
  in run.py's order (with their subsections), or before the first that comes after it;
- the preamble is the generated one when the run asks for it, else the page's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Section(NamedTuple):
    """One heading and the lines under it, up to the next ``## `` / ``### `` heading."""

    title: str  # the heading without its leading hashes, e.g. "Viewer frame cost"
    level: int  # 2 for "## ", 3 for "### "
    text: str  # the heading line and the lines below it, newline-terminated


def _heading(line: str) -> tuple[str, int] | None:
    """(title, level) of a ``## `` or ``### `` heading line, else None."""
    for level in (2, 3):
        mark = "#" * level + " "
        if line.startswith(mark):
            return line[len(mark):].strip(), level
    return None


def split_page(text: str) -> tuple[str, list[Section]]:
    """The preamble and the sections of a markdown page (headings inside ``` fences are
    text, not headings)."""
    preamble: list[str] = []
    sections: list[tuple[str, int, list[str]]] = []
    in_fence = False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        found = None if in_fence else _heading(line)
        if found is not None:
            sections.append((found[0], found[1], [line]))
        elif sections:
            sections[-1][2].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), [Section(t, lv, _ended("".join(body))) for t, lv, body in sections]


def _ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def merge_page(
    existing: str,
    generated: str,
    order: Sequence[str],
    replace_preamble: bool = True,
) -> str:
    """``existing`` with the sections of ``generated`` merged in (module docstring).

    ``order``: the titles of every section run.py can generate, in its order; a generated
    section whose title is not in ``order`` raises ValueError (its place would be unknown).
    ``replace_preamble``: take the generated preamble (title, recipe, machine) instead of
    the page's own (a page without one always takes the generated one).
    """
    old_preamble, old = split_page(existing)
    new_preamble, new = split_page(generated)
    rank = {title: i for i, title in enumerate(order)}
    unknown = [s.title for s in new if s.title not in rank]
    if unknown:
        raise ValueError(
            f"generated sections: {unknown!r} are not in run.py's section order; "
            f"allowed: {list(order)!r}"
        )
    fresh = {s.title: s for s in new}
    merged = [fresh.get(s.title, s) for s in old]
    for section in new:
        if any(s.title == section.title for s in merged):
            continue
        merged.insert(_place(merged, rank, rank[section.title]), section)
    preamble = old_preamble if old_preamble.strip() and not replace_preamble else new_preamble
    return preamble + "".join(
        s.text if i + 1 == len(merged) or s.text.endswith("\n\n") else s.text + "\n"
        for i, s in enumerate(merged)
    )


def _place(merged: Sequence[Section], rank: dict[str, int], wanted: int) -> int:
    """Where a generated section of rank ``wanted`` goes: after the last generated section
    ranked before it and that section's subsections; else before the first ranked after it;
    else at the end."""
    after = None
    for i, s in enumerate(merged):
        if s.title in rank and rank[s.title] < wanted:
            after = i
    if after is not None:
        i = after + 1
        while i < len(merged) and merged[i].level > merged[after].level:
            i += 1
        return i
    for i, s in enumerate(merged):
        if s.title in rank:
            return i
    return len(merged)
