"""Builders: counts against formulas, geometry, pins, Young's modulus, validation."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from ropesim.engine import builders
from ropesim.engine.builders import cloth, random_network, ring, rope, star, triangle


def spring_lengths(system) -> np.ndarray:
    pos = system.positions
    return np.linalg.norm(pos[system.springs[:, 0]] - pos[system.springs[:, 1]], axis=1)


def assert_distinct_springs(system) -> None:
    pairs = {tuple(sorted(p)) for p in system.springs.tolist()}
    assert len(pairs) == system.n_springs


# --- rope -----------------------------------------------------------------------------
@pytest.mark.parametrize("n, bend", [(2, False), (3, False), (17, False), (3, True), (17, True)])
def test_rope_counts_and_rest_lengths(n, bend):
    system = rope(n, length=2.0, bend=bend)
    assert system.n_particles == n
    assert system.n_springs == (n - 1) + (n - 2 if bend else 0)
    assert_distinct_springs(system)
    segment = 2.0 / (n - 1)
    np.testing.assert_allclose(system.rest_lengths[: n - 1], segment)
    np.testing.assert_allclose(system.rest_lengths[n - 1 :], 2 * segment)
    np.testing.assert_allclose(system.rest_lengths, spring_lengths(system))


def test_rope_geometry_follows_origin_and_direction():
    system = rope(5, length=4.0, origin=(1.0, 2.0, 3.0), direction=(0.0, 0.0, -2.0))
    np.testing.assert_allclose(system.positions[0], [1, 2, 3])
    np.testing.assert_allclose(system.positions[-1], [1, 2, -1])


def test_rope_bend_stiffness_applies_to_bend_springs_only():
    system = rope(6, stiffness=100.0, bend=True, bend_stiffness=7.0)
    np.testing.assert_allclose(system.stiffness[:5], 100.0)
    np.testing.assert_allclose(system.stiffness[5:], 7.0)


def test_planar_rope_has_dim_2():
    system = rope(10, dim=2, direction=(1.0, -1.0))
    assert system.dim == 2 and system.planar
    assert system.positions.shape == (10, 2)


@pytest.mark.parametrize(
    "pins, expected", [("none", []), ("start", [0]), ("end", [9]), ("both", [0, 9]),
                       ([3, 5], [3, 5])]
)
def test_rope_pins(pins, expected):
    assert np.flatnonzero(rope(10, pins=pins).pinned).tolist() == expected


# --- cloth ----------------------------------------------------------------------------
def cloth_counts(nx: int, ny: int) -> dict[str, int]:
    return {
        "structural": ny * (nx - 1) + nx * (ny - 1),
        "shear": 2 * (nx - 1) * (ny - 1),
        "bend": ny * (nx - 2) + nx * (ny - 2),
    }


@pytest.mark.parametrize("nx, ny", [(2, 2), (3, 5), (7, 4), (24, 24)])
@pytest.mark.parametrize(
    "families", [("structural",), ("structural", "shear"), ("structural", "shear", "bend"),
                 ("shear", "bend")]
)
def test_cloth_spring_counts(nx, ny, families):
    flags = {f: f in families for f in ("structural", "shear", "bend")}
    system = cloth(nx, ny, **flags)
    counts = cloth_counts(nx, ny)
    assert system.n_particles == nx * ny
    assert system.n_springs == sum(counts[f] for f in families)
    assert_distinct_springs(system)
    groups = system.meta["spring_groups"]
    assert {f: hi - lo for f, (lo, hi) in groups.items()} == {f: counts[f] for f in families}


@pytest.mark.parametrize("plane", ["xy", "xz"])
def test_cloth_rest_lengths_per_family(plane):
    spacing = 0.1
    system = cloth(6, 5, spacing, plane=plane)
    expected = {"structural": spacing, "shear": spacing * np.sqrt(2), "bend": 2 * spacing}
    for family, (lo, hi) in system.meta["spring_groups"].items():
        np.testing.assert_allclose(system.rest_lengths[lo:hi], expected[family])


def test_cloth_grid_layout_xy_hangs_from_row_0():
    nx, ny, spacing = 5, 4, 0.2
    system = cloth(nx, ny, spacing)
    assert system.grid_shape == (ny, nx)
    pos = system.positions.reshape(ny, nx, 3)
    np.testing.assert_allclose(pos[..., 1], -np.arange(ny)[:, None] * spacing * np.ones(nx))
    np.testing.assert_allclose(pos[0, :, 0].mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.diff(pos[0, :, 0]), spacing)
    np.testing.assert_allclose(pos[..., 2], 0.0)


def test_cloth_xz_lies_flat_and_centred():
    system = cloth(5, 7, 0.1, plane="xz", origin=(0.0, 2.0, 0.0))
    np.testing.assert_allclose(system.positions[:, 1], 2.0)
    np.testing.assert_allclose(system.positions[:, [0, 2]].mean(axis=0), 0.0, atol=1e-12)


@pytest.mark.parametrize("plane, normal", [("xy", [0, 0, 1]), ("xz", [0, 1, 0])])
def test_cloth_triangles_cover_grid_with_consistent_winding(plane, normal):
    nx, ny, spacing = 6, 4, 0.1
    system = cloth(nx, ny, spacing, plane=plane)
    tris = system.triangles
    assert tris.shape == (2 * (nx - 1) * (ny - 1), 3)
    p = system.positions
    normals = np.cross(p[tris[:, 1]] - p[tris[:, 0]], p[tris[:, 2]] - p[tris[:, 0]])
    # every triangle faces the same way and has half a cell's area
    np.testing.assert_allclose(normals, np.tile(normal, (len(tris), 1)) * spacing**2, atol=1e-12)
    assert np.unique(tris).size == nx * ny


@pytest.mark.parametrize("plane", ["xy", "xz"])
@pytest.mark.parametrize(
    "pins, expected",
    [("none", []), ("corner", [0]), ("top-corners", [0, 4]), ("four-corners", [0, 4, 15, 19]),
     ("top-edge", [0, 1, 2, 3, 4]), ([7, 2], [2, 7])],
)
def test_cloth_pins(plane, pins, expected):
    system = cloth(5, 4, plane=plane, pins=pins)
    assert np.flatnonzero(system.pinned).tolist() == expected


def test_cloth_top_pins_are_the_highest_row_when_hanging():
    system = cloth(5, 4, pins="top-edge")
    top = system.positions[:, 1].max()
    np.testing.assert_allclose(system.positions[system.pinned, 1], top)


# --- young's modulus ------------------------------------------------------------------
@pytest.mark.parametrize(
    "make", [lambda **kw: rope(8, bend=True, **kw), lambda **kw: cloth(5, 4, **kw),
             lambda **kw: ring(9, spokes=True, **kw), lambda **kw: star(4, 3, rim=True, **kw),
             lambda **kw: triangle(**kw), lambda **kw: random_network(10, 20, **kw)],
)
def test_young_modulus_gives_k_equal_e_over_rest_length(make):
    system = make(young_modulus=50.0)
    np.testing.assert_allclose(system.stiffness, 50.0 / system.rest_lengths)


def test_finer_cloth_with_same_young_modulus_has_stiffer_springs():
    coarse = cloth(5, 5, 0.2, young_modulus=100.0, shear=False, bend=False)
    fine = cloth(9, 9, 0.1, young_modulus=100.0, shear=False, bend=False)
    np.testing.assert_allclose(coarse.stiffness, 500.0)
    np.testing.assert_allclose(fine.stiffness, 2 * 500.0)


# --- ring, star, triangle -------------------------------------------------------------
@pytest.mark.parametrize("n", [3, 12])
@pytest.mark.parametrize("spokes", [False, True])
def test_ring_counts_and_rest_lengths(n, spokes):
    radius = 1.5
    system = ring(n, radius, spokes=spokes)
    assert system.n_particles == n + spokes
    assert system.n_springs == n * (2 if spokes else 1)
    assert_distinct_springs(system)
    np.testing.assert_allclose(system.rest_lengths[:n], 2 * radius * np.sin(np.pi / n))
    np.testing.assert_allclose(system.rest_lengths[n:], radius)
    assert system.dim == 2
    assert system.positions[0, 1] == pytest.approx(radius)  # particle 0 at the top
    if spokes:
        assert np.flatnonzero(ring(n, spokes=True, pins="center").pinned).tolist() == [n]


def test_ring_dim_3_and_top_pin():
    system = ring(6, dim=3, pins="top", center=(0.0, 1.0, 2.0))
    assert system.dim == 3
    assert np.flatnonzero(system.pinned).tolist() == [0]
    np.testing.assert_allclose(system.positions.mean(axis=0), [0.0, 1.0, 2.0], atol=1e-12)


@pytest.mark.parametrize(
    "arms, per_arm, rim", [(2, 1, False), (5, 6, False), (3, 1, True), (5, 6, True), (8, 3, True)]
)
def test_star_counts_and_tips(arms, per_arm, rim):
    system = star(arms, per_arm, rim=rim, arm_length=1.2, pins="tips")
    assert system.n_particles == 1 + arms * per_arm
    assert system.n_springs == arms * per_arm * (2 if rim else 1)
    assert_distinct_springs(system)
    tips = np.flatnonzero(system.pinned)
    assert tips.tolist() == [1 + a * per_arm + per_arm - 1 for a in range(arms)]
    np.testing.assert_allclose(np.linalg.norm(system.positions[tips], axis=1), 1.2)
    np.testing.assert_allclose(system.rest_lengths[: arms * per_arm], 1.2 / per_arm)
    assert np.flatnonzero(star(arms, per_arm).pinned).tolist() == [0]


def test_triangle_matches_the_notebook():
    system = triangle()
    np.testing.assert_array_equal(system.positions, [[0, 0], [1, 0], [0, -1]])
    np.testing.assert_array_equal(system.springs, [[0, 1], [1, 2], [2, 0]])
    np.testing.assert_allclose(system.rest_lengths, 0.5)
    np.testing.assert_allclose(system.stiffness, 2.0)
    assert system.planar and not system.pinned.any()


# --- random network -------------------------------------------------------------------
def is_connected(system) -> bool:
    neighbours = [[] for _ in range(system.n_particles)]
    for a, b in system.springs.tolist():
        neighbours[a].append(b)
        neighbours[b].append(a)
    seen, queue = {0}, deque([0])
    while queue:
        for j in neighbours[queue.popleft()]:
            if j not in seen:
                seen.add(j)
                queue.append(j)
    return len(seen) == system.n_particles


@pytest.mark.parametrize("n, m", [(2, 1), (30, 29), (30, 60), (12, 66)])
def test_random_network_is_connected_with_m_distinct_springs(n, m):
    for seed in range(5):
        system = random_network(n, m, seed=seed)
        assert system.n_springs == m
        assert_distinct_springs(system)
        assert is_connected(system)
        np.testing.assert_allclose(system.rest_lengths, spring_lengths(system))


def test_random_network_is_reproducible_per_seed():
    a, b, c = random_network(20, 40, seed=3), random_network(20, 40, seed=3), random_network(
        20, 40, seed=4
    )
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.springs, b.springs)
    assert not np.array_equal(a.positions, c.positions)
    assert not np.array_equal(a.springs, c.springs)


def test_random_network_box_and_top_pin():
    system = random_network(25, 40, box=3.0, dim=2, pins="top")
    assert system.dim == 2
    assert np.all(np.abs(system.positions) <= 1.5)
    assert np.flatnonzero(system.pinned).tolist() == [int(np.argmax(system.positions[:, 1]))]


# --- validation -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rope(n=1), r"^n: must be >= 2"),
        (lambda: rope(n=2.5), r"^n: expected an integer"),
        (lambda: rope(length=0), r"^length: must be"),
        (lambda: rope(dim=4), r"^dim: allowed 2 \(planar\) or 3"),
        (lambda: rope(direction=(0, 0, 0)), r"^direction: must be a non-zero"),
        (lambda: rope(dim=2, origin=(0, 0, 1)), r"^origin: a planar system"),
        (lambda: rope(n=2, bend=True), r"^bend: "),
        (lambda: rope(pins="middle"), r"^pins: unknown name 'middle'; allowed: none, start, end"),
        (lambda: rope(n=5, pins=[0, 5]), r"^pins: particle indices must be in 0\.\.4"),
        (lambda: rope(pins=[0.5, "x"]), r"^pins: expected a name or a list of indices"),
        (lambda: rope(mass=-1.0), r"^mass: "),
        (lambda: rope(stiffness=-1.0), r"^stiffness: "),
        (lambda: rope(damping=-1.0), r"^damping: "),
        (lambda: rope(young_modulus=-5.0), r"^young_modulus: "),
        (lambda: cloth(nx=1), r"^nx: must be >= 2"),
        (lambda: cloth(ny=0), r"^ny: must be >= 2"),
        (lambda: cloth(spacing=-0.1), r"^spacing: "),
        (lambda: cloth(plane="yz"), r"^plane: allowed 'xy' or 'xz'"),
        (lambda: cloth(pins="top"),
         r"^pins: unknown name 'top'; allowed: none, corner, top-corners, four-corners, "
         r"top-edge, edges, or a list of indices"),
        (lambda: cloth(structural=False, shear=False, bend=False), r"structural, shear, bend"),
        (lambda: ring(n=2), r"^n: must be >= 3"),
        (lambda: ring(radius=0), r"^radius: "),
        (lambda: ring(pins="center"), r"^pins: unknown name 'center'; allowed: none, top,"),
        (lambda: star(arms=1), r"^arms: must be >= 2"),
        (lambda: star(per_arm=0), r"^per_arm: must be >= 1"),
        (lambda: star(arms=2, rim=True), r"^rim: "),
        (lambda: triangle(rest_length=0), r"^rest_length: "),
        (lambda: random_network(10, 8), r"^m: .*9 <= m <= 45.*got m = 8"),
        (lambda: random_network(10, 46), r"^m: .*9 <= m <= 45.*got m = 46"),
        (lambda: random_network(seed="a"), r"^seed: "),
        (lambda: random_network(pins="bottom"), r"^pins: unknown name 'bottom'"),
    ],
)
def test_validation_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_registry_lists_every_builder():
    assert set(builders.BUILDERS) == {
        "rope", "cloth", "ring", "star", "triangle", "random_network", "explicit"
    }


# --- validation: issue 10 cases ------------------------------------------------------------
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rope(bend=True, bend_stiffness=-1.0), r"^bend_stiffness: must be >= 0 N/m"),
        (lambda: rope(bend=True, bend_stiffness="stiff"), r"^bend_stiffness: expected a number"),
        (lambda: rope(pins=[0.7]), r"^pins: expected a name or a list of indices"),
        (lambda: rope(pins=[True]), r"^pins: expected a name or a list of indices"),
        (lambda: rope(pins=[[0, 1]]), r"^pins: expected a flat list of indices"),
        (lambda: rope(n=True), r"^n: expected an integer >= 2, got True"),
        (lambda: rope(n=2**40), r"^n: must be <= 2147483647"),
        (lambda: rope(dim=True), r"^dim: allowed 2 \(planar\) or 3, got True"),
        (lambda: rope(dim=np.array([2, 3])), r"^dim: allowed 2 \(planar\) or 3"),
        (lambda: rope(bend="yes"), r"^bend: expected true or false, got 'yes'"),
        (lambda: rope(length=np.inf), r"^length: must be a finite number \(m\), got inf"),
        (lambda: rope(length="3"), r"^length: expected a number m, got '3'"),
        (lambda: rope(mass=None), r"^mass: expected a number kg, got None"),
        (lambda: rope(stiffness=np.nan), r"^stiffness: must be a finite number"),
        (lambda: rope(stiffness=[1.0, 2.0]), r"^stiffness: expected a number N/m"),
        (lambda: rope(damping=True), r"^damping: expected a number"),
        (lambda: rope(young_modulus=np.inf), r"^young_modulus: must be a finite number"),
        (lambda: rope(origin="here"), r"^origin: expected numbers \(m\), got 'here'"),
        (lambda: rope(origin=(0, np.nan, 0)), r"^origin: must be a finite number"),
        (lambda: rope(direction=(1, 2, 3, 4)), r"^direction: expected 2 or 3 finite numbers"),
        (lambda: rope(origin=(1e20, 0, 0)), r"^origin, length, n: springs of .* lose their length"),
        (lambda: cloth(spacing=1e-14), r"^spacing: makes springs of 1e-14 m, too short"),
        (lambda: cloth(nx=2**16, ny=2**16), r"^nx, ny: 4294967296 particles in all; allowed at "
                                             r"most 2147483647"),
        (lambda: cloth(plane=["xy"]), r"^plane: allowed 'xy' or 'xz', got \['xy'\]"),
        (lambda: cloth(shear=1), r"^shear: expected true or false, got 1"),
        (lambda: cloth(origin=(0, 0, np.inf)), r"^origin: must be a finite number"),
        (lambda: ring(spokes="no"), r"^spokes: expected true or false"),
        (lambda: ring(center=(1e30, 0)), r"^center, radius: springs of .* lose their length"),
        (lambda: star(rim=None), r"^rim: expected true or false, got None"),
        (lambda: star(arms=2**20, per_arm=2**12), r"^arms, per_arm: .* particles in all"),
        (lambda: random_network(seed=-1), r"^seed: expected an integer >= 0, got -1"),
        (lambda: random_network(seed=True), r"^seed: expected an integer >= 0, got True"),
        (lambda: random_network(box=1e-300), r"^center, box: springs of .* lose their length"
                                              r"|^box: makes springs"),
        (lambda: triangle(mass=-1.0), r"^mass: must be > 0 kg"),
        (lambda: triangle(pins=[3]), r"^pins: particle indices must be in 0\.\.2, got \[3\]"),
    ],
)
def test_bad_values_name_the_argument_the_value_and_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_direction_with_huge_or_tiny_components_is_normalised():
    half = np.sqrt(0.5)
    for direction, unit in [((1e100, 1e100, 0.0), (half, half, 0.0)),
                            ((1e-200, 0.0, 1e-200), (half, 0.0, half))]:
        system = rope(5, 4.0, direction=direction)
        np.testing.assert_allclose(system.positions[-1], 4.0 * np.array(unit))


def test_integral_float_pins_are_accepted_fractions_are_not():
    assert np.flatnonzero(rope(5, pins=[1.0, 3.0]).pinned).tolist() == [1, 3]
    assert np.flatnonzero(rope(5, pins=np.array([4])).pinned).tolist() == [4]
    with pytest.raises(ValueError, match=r"^pins: "):
        rope(5, pins=[1.5])


@pytest.mark.parametrize("name, params", [
    ("rope", {}), ("rope", {"n": 9, "bend": True}), ("cloth", {}),
    ("cloth", {"nx": 5, "ny": 3, "shear": False}), ("cloth", {"nx": 4, "ny": 6, "bend": False}),
    ("ring", {"spokes": True}), ("ring", {"n": 5}), ("star", {"rim": True}),
    ("star", {"arms": 3, "per_arm": 1}), ("triangle", {}), ("random_network", {"n": 12, "m": 20}),
    ("explicit", {"positions": [[0, 0], [1, 0], [2, 0]], "springs": [[0, 1], [1, 2]]}),
])
def test_planned_size_counts_what_the_builder_makes(name, params):
    system = builders.BUILDERS[name](**params)
    assert builders.planned_size(name, params) == (system.n_particles, system.n_springs)


def test_planned_size_is_none_for_counts_that_are_not_integers():
    assert builders.planned_size("rope", {"n": "many"}) is None
    assert builders.planned_size("cloth", {"nx": 2.5}) is None
    assert builders.planned_size("cloth", {"nx": True}) is None
