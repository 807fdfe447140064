"""benchmarks/time_collisions.py --phases: where a step with self-collision goes."""

from benchmark_scripts import load

from ropesim.engine.collisions import self_contact
from ropesim.engine.collisions.neighbours import NeighbourList


def test_phases_split_every_block_into_its_parts_and_count_the_contacts():
    time_collisions = load("time_collisions")
    originals = {name: getattr(self_contact, name) for name in time_collisions.PhaseTimer.PARTS}
    rows = time_collisions.phases(32, 2.0, block_steps=100)
    assert len(rows) == 12
    assert [float(r[0]) for r in rows] == sorted(float(r[0]) for r in rows)
    assert abs(float(rows[-1][0]) - 2.0) < 1e-6
    projections = 0
    for row in rows:
        step, parts, rest = float(row[2]), [float(c) for c in row[3:7]], float(row[7])
        assert step > 0 and all(t >= 0.0 for t in parts) and rest >= 0.0
        assert abs(sum(parts) + rest - step) < 2e-3  # the parts and the rest make the step
        assert parts[0] > 0.0  # the list is updated every step
        assert 0 <= int(row[8]) <= 100  # at most one rebuild a step
        projections += int(row[9].replace(",", ""))
    # the 32 x 32 cloth bunches and touches itself in its first 2 s
    assert projections > 0
    assert any(float(r[6]) > 0.0 for r in rows)
    # the wrapped functions are put back
    for name, function in originals.items():
        assert getattr(self_contact, name) is function


def test_phase_timer_counts_the_passes_projections_it_sees():
    time_collisions = load("time_collisions")
    sim = time_collisions.make(32, True)
    sim.step(round(1.2 / time_collisions.DT))
    with time_collisions.PhaseTimer(sim) as timer:
        sim.step(100)
        seen = timer.projections
    assert "update" not in vars(sim._self_collision.neighbours)
    assert sim._self_collision.neighbours.update.__func__ is NeighbourList.update
    sim.step(1)
    assert timer.projections == seen  # nothing counted after the exit
    assert seen > 0  # the cloth lies on itself from about 1.2 s
    assert seen == sum_touching(time_collisions, 1.2, 100)


def sum_touching(time_collisions, start_s, steps):
    """The pair projections of ``steps`` steps from start_s, summed step by step."""
    sim = time_collisions.make(32, True)
    sim.step(round(start_s / time_collisions.DT))
    total = 0
    for _ in range(steps):
        sim.step(1)
        total += sim._self_collision.touching
    return total
