"""`benchmarks/run.py --write FILE` rewrites only the sections it generates.

benchmarks/report.py merges a generated page into the existing one: hand-written sections
(and generated ones this run did not measure) stay in place, generated ones are replaced,
a new generated section goes where run.py's order puts it. Checked on synthetic pages,
and once through run.py itself (``--report-from`` saved results: nothing is timed).
"""

import os
import pickle
import subprocess
import sys

import pytest

from benchmark_scripts import BENCHMARKS, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

report = load("report")

ORDER = ("Side by side", "Explicit", "Implicit", "Frame", "How")

OLD_PAGE = """# Performance

Old preamble: run on day 1.

## Side by side

Old side by side, hand-edited with two runs.

## Explicit

Old explicit table.

## History

Hand-written history section.

```
## not a heading: inside a code block
```

## Implicit

Old implicit table.

### Whole frames, written by hand

Under the implicit section.

## How

Old how.

## Self-collision

Hand-written, last on the page."""

NEW_PAGE = """# Performance

New preamble: run on day 2.

## Explicit

New explicit table.

## Frame

New frame table.

## How

New how.
"""


def _titles(page):
    return [s.title for s in report.split_page(page)[1]]


def test_split_page_ignores_headings_inside_code_fences():
    preamble, sections = report.split_page(OLD_PAGE)
    assert preamble.startswith("# Performance") and "Old preamble" in preamble
    assert _titles(OLD_PAGE) == ["Side by side", "Explicit", "History", "Implicit",
                                 "Whole frames, written by hand", "How", "Self-collision"]
    history = sections[2]
    assert history.level == 2 and "## not a heading" in history.text
    assert sections[4].level == 3


def test_hand_written_sections_survive_generated_ones_are_replaced_order_kept():
    merged = report.merge_page(OLD_PAGE, NEW_PAGE, ORDER)
    assert _titles(merged) == ["Side by side", "Explicit", "History", "Implicit",
                               "Whole frames, written by hand", "Frame", "How",
                               "Self-collision"]
    for kept in ("Old side by side, hand-edited", "Hand-written history section.",
                 "## not a heading: inside a code block", "Old implicit table.",
                 "Under the implicit section.", "Hand-written, last on the page."):
        assert kept in merged
    for replaced in ("Old explicit table.", "Old how.", "Old preamble"):
        assert replaced not in merged
    for new in ("New explicit table.", "New frame table.", "New how.", "New preamble"):
        assert new in merged
    assert merged.endswith("Hand-written, last on the page.\n")
    assert "New how.\n\n## Self-collision" in merged  # a blank line before each heading


def test_partial_run_keeps_the_preamble_and_every_other_section_byte_for_byte():
    only_side_by_side = "# Performance\n\nNew preamble.\n\n## Side by side\n\nNew run.\n"
    merged = report.merge_page(OLD_PAGE, only_side_by_side, ORDER, replace_preamble=False)
    expected = OLD_PAGE.replace("Old side by side, hand-edited with two runs.", "New run.")
    assert merged == expected + "\n"


def test_new_section_before_every_existing_generated_one_goes_first():
    page = "# P\n\n## Hand\n\nhand\n\n## Implicit\n\nold\n"
    merged = report.merge_page(page, "# P\n\n## Side by side\n\nnew\n", ORDER)
    assert _titles(merged) == ["Hand", "Side by side", "Implicit"]


def test_empty_page_takes_the_generated_one():
    assert report.merge_page("", NEW_PAGE, ORDER, replace_preamble=False) == NEW_PAGE


def test_generated_section_outside_the_order_is_refused_by_name():
    with pytest.raises(ValueError, match="'Mystery'.*allowed"):
        report.merge_page(OLD_PAGE, "# P\n\n## Mystery\n\nx\n", ORDER)


def test_run_py_baseline_only_rewrites_just_the_side_by_side_section(tmp_path):
    """`run.py --only none --baseline DIR --write FILE`, from saved results: the real
    performance page keeps everything but the side-by-side section."""
    with open(os.path.join(ROOT, "docs", "performance.md")) as fh:
        page = fh.read()
    target = tmp_path / "performance.md"
    target.write_text(page)
    side = {("this", "explicit 64"): [9000.0], ("baseline", "explicit 64"): [8000.0],
            ("this", "implicit"): [0.30], ("baseline", "implicit"): [0.33]}
    data = {"date": "2026-12-01 15:00", "rounds": 1, "sizes": [64], "impls": [],
            "steps": 100, "budget": 1.0,
            "argv": ["--only", "none", "--baseline", "../baseline", "--write", "x.md"],
            "machine": {"python": "3", "numpy": "2", "numba": "0", "warp": "-",
                        "taichi": "-", "commit": "abc1234"},
            "side_by_side": {"baseline": os.path.join(ROOT, "..", "baseline"),
                             "commit": "adbc7c0", "sizes": [64], "results": side}}
    saved = tmp_path / "results.pkl"
    saved.write_bytes(pickle.dumps(data))
    subprocess.run([sys.executable, os.path.join(BENCHMARKS, "run.py"), "--report-from",
                    str(saved), "--write", str(target)], check=True, capture_output=True,
                   timeout=300)
    merged = target.read_text()
    title = "This checkout against a baseline checkout"
    old_pre, old_sections = report.split_page(page)
    new_pre, new_sections = report.split_page(merged)
    assert new_pre == old_pre
    assert [s.title for s in new_sections] == [s.title for s in old_sections]
    for old, new in zip(old_sections, new_sections):
        if old.title == title:
            assert "| symplectic Euler, float32, N = 64 (steps/s) | 9,000 | 8,000 | **1.12x** |" \
                in new.text
            assert "commit adbc7c0" in new.text and "Measured on 2026-12-01 15:00" in new.text
        else:
            assert new.text.rstrip("\n") == old.text.rstrip("\n"), old.title
