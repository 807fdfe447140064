"""What self-collision costs on the standard cloth (benchmarks/workload.py: float32,
symplectic Euler, dt = 1/600 s), and ropesim's collision pass against the same pass
written with Warp's hash grid on the CPU (benchmarks/peers_collision.py).

    PYTHONPATH=. python benchmarks/time_collisions.py [--sizes 32 64 128 256] [--rounds 3]

Per size: two simulations of the cloth, self-collision on and off, run a warm-up from
rest (the cloth swings down and bunches up, so there is contact), then

1. steps/s with and without self-collision, timed in alternating rounds (and again
   from FOLDED_S = 1.5 s, when the cloth's free side lies on it in layers and there
   are thousands of contacts);
2. the pass alone: on each step of the simulation with self-collision, the state the
   pass is about to see is copied, ropesim's pass runs on the live state and Warp's on
   the copy, alternating which goes first, each timed by itself; printed are the
   means per call, their ratio and how often ropesim rebuilt its neighbour list;
3. the pass alone again from FOLDED_S (ropesim's pass then runs up to ITERATIONS
   Gauss-Seidel passes over thousands of contacts, Warp's one Jacobi pass).

With ``--whole-run S``, then a second table: per size, steps/s on and off over the
first S simulated seconds from rest (all its phases: swinging down, bunching, folding,
swinging back), in alternating blocks of BLOCK_STEPS steps, with the slowest and the
fastest block with self-collision.

With ``--phases S``, then per size a table of where a step with self-collision goes over
the first S simulated seconds, block by block (PhaseTimer): the neighbour list's update
(drift checks and rebuilds), the touching pairs, the split, the Gauss-Seidel passes and
the rest of the step (forces, integrator, Python), with the block's list rebuilds and
pair projections.

The machine is shared: compare the ratios of one run, not absolute figures.
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# this checkout's ropesim, not an installed one
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ropesim as rs  # noqa: E402
from ropesim.engine.collisions import EXCLUDE_FACTOR  # noqa: E402
from ropesim.engine.collisions import self_contact  # noqa: E402
from peers_collision import WarpHashGridPass  # noqa: E402
from tables import print_table, sizes_parser  # noqa: E402
from workload import DT, GRAVITY, cloth_arrays, cloth_system  # noqa: E402

WARM_UP_S = 0.5  # simulated seconds before timing: the cloth has swung down and bunched
FOLDED_S = 1.5  # and later: its free side has swung over and lies on it in layers
STEPS = {32: 200, 64: 100, 128: 40, 256: 10}  # per round
BLOCK_STEPS = 200  # steps per block of --whole-run


def make(n: int, self_collision: bool) -> rs.Simulation:
    return rs.Simulation(cloth_system(n), dt=DT, gravity=GRAVITY, dtype=np.float32,
                         integrator="symplectic_euler", self_collision=self_collision)


class TimedPasses:
    """Stands in for the simulation's SelfCollision.apply: runs ropesim's pass and Warp's
    on the same input, each timed."""

    def __init__(self, sim: rs.Simulation, warp: WarpHashGridPass):
        self.collision = sim._self_collision
        self.apply = self.collision.apply
        self.warp = warp
        self.ours: list[float] = []
        self.theirs: list[float] = []
        self.x = np.zeros((sim.n_particles, 3), np.float32)
        self.v = np.zeros_like(self.x)
        self.calls = 0

    def __call__(self, x, v, inv_mass, fixed):
        self.warp.load(x, v)
        ours_first = self.calls % 2 == 0
        self.calls += 1
        for turn in (0, 1):
            if (turn == 0) == ours_first:
                start = time.perf_counter()
                touching = self.apply(x, v, inv_mass, fixed)
                self.ours.append(time.perf_counter() - start)
            else:
                start = time.perf_counter()
                self.warp.pass_()
                self.theirs.append(time.perf_counter() - start)
        return touching


def rates_at(on: rs.Simulation, off: rs.Simulation, t: float, steps: int,
             rounds: int) -> dict[bool, float]:
    """Median steps/s with self-collision on and off from time t (s), alternating."""
    for sim in (on, off):
        sim.step(max(0, round((t - sim.time) / DT)))
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for flag, sim in ((True, on), (False, off)):
            start = time.perf_counter()
            sim.step(steps)
            rates[flag].append(steps / (time.perf_counter() - start))
    return {flag: float(np.median(r)) for flag, r in rates.items()}


def timed_passes(on: rs.Simulation, warp: WarpHashGridPass, steps: int) -> dict:
    """Mean ms per call of ropesim's pass and Warp's on the next ``steps`` steps of
    ``on`` (TimedPasses), and ropesim's list rebuilds per step."""
    timed = TimedPasses(on, warp)
    on._self_collision.apply = timed
    neighbours = on._self_collision.neighbours
    builds = neighbours.builds
    on.step(steps)
    on._self_collision.apply = timed.apply
    return {"ours_ms": 1e3 * float(np.mean(timed.ours)),
            "warp_ms": 1e3 * float(np.mean(timed.theirs)),
            "rebuilds": (neighbours.builds - builds) / steps}


def run(n: int, rounds: int) -> dict:
    on, off = make(n, True), make(n, False)
    steps = STEPS.get(n, 20)
    rates = rates_at(on, off, WARM_UP_S, steps, rounds)
    warp = WarpHashGridPass(cloth_arrays(n), on.thickness, EXCLUDE_FACTOR, on.self_friction)
    warp.load(on.positions, on.velocities)
    warp.pass_()  # compile
    result = {"n": n, "steps_on": rates[True], "steps_off": rates[False],
              **timed_passes(on, warp, steps * rounds)}
    folded = rates_at(on, off, FOLDED_S, steps, rounds)
    result.update(folded_on=folded[True], folded_off=folded[False],
                  pairs=on._self_collision.neighbours.n_pairs)
    passes = timed_passes(on, warp, steps * rounds)
    result.update(folded_ours_ms=passes["ours_ms"], folded_warp_ms=passes["warp_ms"])
    return result


def row(n: int, rounds: int) -> list[str]:
    r = run(n, rounds)
    return [f"{n}", f"{n * n:,}", f"{r['steps_off']:,.0f}", f"{r['steps_on']:,.0f}",
            f"{r['steps_on'] / r['steps_off']:.2f}", f"{r['ours_ms']:.3f}",
            f"{r['warp_ms']:.3f}", f"**{r['warp_ms'] / r['ours_ms']:.2f}x**",
            f"{r['rebuilds']:.2f}", f"{r['folded_off']:,.0f}", f"{r['folded_on']:,.0f}",
            f"{r['pairs']:,}", f"{r['folded_ours_ms']:.3f}", f"{r['folded_warp_ms']:.3f}",
            f"**{r['folded_warp_ms'] / r['folded_ours_ms']:.2f}x**"]


def whole_run(n: int, seconds: float) -> list[str]:
    """A --whole-run row: steps/s on and off over ``seconds`` (s) from rest, alternating
    blocks of BLOCK_STEPS steps, and the slowest and fastest block on."""
    on, off = make(n, True), make(n, False)
    for sim in (on, off):
        sim.step(1)  # compile outside the timing
    spent: dict[bool, list[float]] = {True: [], False: []}  # s per block
    for _ in range(block_count(seconds)):
        for flag, sim in ((True, on), (False, off)):
            start = time.perf_counter()
            sim.step(BLOCK_STEPS)
            spent[flag].append(time.perf_counter() - start)
    steps = BLOCK_STEPS * len(spent[True])
    return [f"{n}", f"{on.time:.2f}", f"{steps / sum(spent[False]):,.0f}",
            f"{steps / sum(spent[True]):,.0f}", f"{BLOCK_STEPS / max(spent[True]):,.0f}",
            f"{BLOCK_STEPS / min(spent[True]):,.0f}"]


#: the parts of a step that PhaseTimer times, in the --phases table's order
PHASE_PARTS = ("list", "touching", "split", "passes")


def block_count(seconds: float, block_steps: int = BLOCK_STEPS) -> int:
    """Blocks of ``block_steps`` steps in ``seconds`` (s) of simulated time (at least 1)."""
    return max(1, round(seconds / DT / block_steps))


class PhaseTimer:
    """While entered, times the parts of every self-collision pass (s, summed in
    ``spent``): the simulation's NeighbourList.update ("list") and self_contact's
    touching_pairs ("touching"), split_sides ("split") and resolve functions
    ("passes"), by wrapping them (SelfCollision.apply looks them up by name at each
    call), and counts the passes' pair projections (``projections``); on exit the
    originals are back."""

    PARTS = {"touching_pairs": "touching", "split_sides": "split",
             "resolve_pairs": "passes", "resolve_sides": "passes",
             "resolve_sides_parallel": "passes"}

    def __init__(self, sim: rs.Simulation):
        self.neighbours = sim._self_collision.neighbours
        self.spent: dict[str, float] = defaultdict(float)
        self.projections = 0
        self.originals = {name: getattr(self_contact, name) for name in self.PARTS}

    def _timed(self, function, part: str):
        spent = self.spent

        def timed(*args, **kwargs):
            start = time.perf_counter()
            result = function(*args, **kwargs)
            spent[part] += time.perf_counter() - start
            if part == "passes":
                self.projections += result
            return result
        return timed

    def __enter__(self) -> "PhaseTimer":
        for name, part in self.PARTS.items():
            setattr(self_contact, name, self._timed(self.originals[name], part))
        self.neighbours.update = self._timed(self.neighbours.update, "list")
        return self

    def __exit__(self, *exc) -> None:
        for name, function in self.originals.items():
            setattr(self_contact, name, function)
        del self.neighbours.update  # the class's method again


def phases(n: int, seconds: float, block_steps: int = BLOCK_STEPS) -> list[dict]:
    """--phases figures: per block of ``block_steps`` steps over ``seconds`` (s) from
    rest, the simulated time at its end ("time", s), steps/s, ms a step in all
    ("step") and in each part (PhaseTimer) and the rest, the list rebuilds and the
    pair projections."""
    sim = make(n, True)
    sim.step(1)  # compile outside the timing
    neighbours = sim._self_collision.neighbours
    blocks = []
    for _ in range(block_count(seconds, block_steps)):
        builds = neighbours.builds
        with PhaseTimer(sim) as timer:
            start = time.perf_counter()
            sim.step(block_steps)
            total = time.perf_counter() - start
        ms = {part: 1e3 * timer.spent[part] / block_steps for part in PHASE_PARTS}
        step_ms = 1e3 * total / block_steps
        blocks.append({"time": sim.time, "steps/s": block_steps / total, "step": step_ms,
                       **ms, "rest": step_ms - sum(ms.values()),
                       "rebuilds": neighbours.builds - builds,
                       "projections": timer.projections})
    return blocks


def phase_row(block: dict) -> list[str]:
    """A --phases table row of one of phases' blocks."""
    return [f"{block['time']:.2f}", f"{block['steps/s']:,.0f}",
            *(f"{block[part]:.3f}" for part in ("step", *PHASE_PARTS, "rest")),
            f"{block['rebuilds']}", f"{block['projections']:,}"]


def main() -> None:
    parser = sizes_parser(__doc__, [32, 64, 128, 256])
    parser.add_argument("--whole-run", type=float, default=0.0, metavar="S",
                        help="also time the first S simulated seconds from rest")
    parser.add_argument("--phases", type=float, default=0.0, metavar="S",
                        help="also split the step's time into its parts, block by block, "
                             "over the first S simulated seconds")
    args = parser.parse_args()
    folded = f"at {FOLDED_S:g} s"
    print_table(("N", "particles", "steps/s off", "steps/s on", "on / off", "ropesim pass ms",
                 "Warp HashGrid pass ms", "Warp / ropesim", "rebuilds per step",
                 f"steps/s off {folded}", f"steps/s on {folded}", f"pairs listed {folded}",
                 f"ropesim pass ms {folded}", f"Warp pass ms {folded}",
                 f"Warp / ropesim {folded}"),
                (row(n, args.rounds) for n in args.sizes))
    if args.whole_run > 0.0:
        print()
        print_table(("N", "simulated s", "steps/s off", "steps/s on", "slowest block on",
                     "fastest block on"), (whole_run(n, args.whole_run) for n in args.sizes))
    for n in args.sizes if args.phases > 0.0 else ():
        print(f"\nN = {n}, self-collision on, ms a step in blocks of {BLOCK_STEPS} steps:\n")
        print_table(("simulated s", "steps/s", "step", *PHASE_PARTS, "rest", "rebuilds",
                     "pair projections"),
                    (phase_row(block) for block in phases(n, args.phases)))


if __name__ == "__main__":
    main()
