"""Self-collision speed of this checkout against a git revision, in one process.

    python benchmarks/side_by_side.py REV [--size 128] [--seconds 8] [--runs 2]

Separate processes on this shared machine differ by up to 30 % from run to run (the
cloth alone steps at 4,900-7,300 steps/s from one minute to the next), which hides a
change of a few per cent. So REV's ``ropesim`` package is exported (git archive) to a
cache folder as ``ropesim_<commit>`` (its absolute imports rewritten; numba's cache of
it is kept there for the next run), and both step the standard cloth (workload.py:
float32, symplectic Euler, dt = 1/600 s) with self-collision from rest over the same
simulated seconds, in alternating blocks of BLOCK_STEPS steps (ABBA order), so that a
slow phase of the machine falls on both. A first run of both, untimed, compiles what
the timed runs will call. Printed per timed run: steps/s of each, the median and range
of the per-block time ratio (REV / this checkout: above 1, this checkout is faster)
and whether the two end bit for bit in the same state.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))  # this checkout's ropesim, not an installed one

import ropesim as rs  # noqa: E402
from workload import DT, GRAVITY, cloth_arrays, cloth_system, cloth_triangles  # noqa: E402

BLOCK_STEPS = 200
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ropesim-side-by-side"
IMPORT = re.compile(r"\b(from|import) ropesim\b")
DOTTED = re.compile(r"\bropesim\.")


def export(rev: str):
    """REV's ropesim package, imported as ropesim_<commit> from the cache folder."""
    commit = subprocess.run(["git", "rev-parse", "--short=10", rev], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    name = f"ropesim_{commit}"
    folder = CACHE / commit
    if not (folder / name).is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "ropesim"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        for path in (folder / "ropesim").rglob("*.py"):
            text = path.read_text()
            path.write_text(DOTTED.sub(f"{name}.", IMPORT.sub(rf"\1 {name}", text)))
        (folder / "ropesim").rename(folder / name)
    sys.path.insert(0, str(folder))
    return importlib.import_module(name), commit


def simulations(other, n: int) -> dict:
    """The benchmark cloth in this checkout ("this") and in REV's package ("rev")."""
    a = cloth_arrays(n)
    theirs = other.SpringSystem(a.positions, a.springs, a.rest, mass=a.mass,
                                stiffness=a.stiffness, damping=a.damping, pinned=a.pinned,
                                grid_shape=(n, n), name=f"cloth{n}",
                                triangles=cloth_triangles(n))
    settings = dict(dt=DT, gravity=GRAVITY, dtype=np.float32, integrator="symplectic_euler",
                    self_collision=True)
    return {"rev": other.Simulation(theirs, **settings),
            "this": rs.Simulation(cloth_system(n), **settings)}


def run(other, n: int, blocks: int) -> dict:
    """Seconds per block of each, stepping in ABBA order; the end states."""
    sims = simulations(other, n)
    spent: dict[str, list[float]] = {"rev": [], "this": []}
    for block in range(blocks):
        for name in (("rev", "this") if block % 2 == 0 else ("this", "rev")):
            start = time.perf_counter()
            sims[name].step(BLOCK_STEPS)
            spent[name].append(time.perf_counter() - start)
    return {"spent": spent, "same": bool(np.array_equal(sims["rev"].positions,
                                                        sims["this"].positions))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="git revision to compare with (e.g. HEAD~3)")
    parser.add_argument("--size", type=int, default=128, help="cloth of N x N particles")
    parser.add_argument("--seconds", type=float, default=8.0, help="simulated s from rest")
    parser.add_argument("--runs", type=int, default=2, help="timed runs")
    args = parser.parse_args()
    other, commit = export(args.rev)
    blocks = max(1, round(args.seconds / DT / BLOCK_STEPS))
    run(other, args.size, blocks)  # compile (or load from the caches) what the runs call
    print(f"| run | steps/s {commit} | steps/s this checkout | block time ratio "
          f"{commit} / this, median | range | same end state |")
    print("|---|---|---|---|---|---|")
    for k in range(args.runs):
        result = run(other, args.size, blocks)
        rev, this = (np.array(result["spent"][name]) for name in ("rev", "this"))
        ratio = rev / this
        steps = BLOCK_STEPS * blocks
        print(f"| {k + 1} | {steps / rev.sum():,.0f} | {steps / this.sum():,.0f} | "
              f"{np.median(ratio):.3f} | {ratio.min():.2f}-{ratio.max():.2f} | "
              f"{'yes' if result['same'] else 'no'} |")


if __name__ == "__main__":
    main()
