"""benchmarks/time_collisions.py --phases: where a step with self-collision goes."""

from benchmark_scripts import load

from ropesim.engine.collisions import self_contact
from ropesim.engine.collisions.neighbours import NeighbourList


def test_phases_split_every_block_into_its_parts_and_count_the_contacts():
    time_collisions = load("time_collisions")
    originals = {name: getattr(self_contact, name) for name in time_collisions.PhaseTimer.PARTS}
    blocks = time_collisions.phases(32, 2.0, block_steps=100)
    assert len(blocks) == 12 == time_collisions.block_count(2.0, 100)
    times = [block["time"] for block in blocks]
    # one step to compile, then the blocks
    assert times == sorted(times) and abs(times[-1] - 1201 * time_collisions.DT) < 1e-9
    for block in blocks:
        parts = [block[part] for part in time_collisions.PHASE_PARTS]
        assert block["step"] > 0 and all(t >= 0.0 for t in parts) and block["rest"] >= 0.0
        # the parts and the rest make the step
        assert abs(sum(parts) + block["rest"] - block["step"]) < 1e-9
        assert abs(block["steps/s"] * block["step"] - 1e3) < 1e-6
        assert block["list"] > 0.0  # the list is updated every step
        assert 0 <= block["rebuilds"] <= 100  # at most one rebuild a step
        row = time_collisions.phase_row(block)
        assert len(row) == 10 and row[3] == f"{block['list']:.3f}"
    # the 32 x 32 cloth bunches and touches itself in its first 2 s
    assert sum(block["projections"] for block in blocks) > 0
    assert any(block["passes"] > 0.0 for block in blocks)
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
