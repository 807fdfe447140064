"""GridMultigrid's set-up helpers give what the plain Python versions give."""

import numpy as np

from ropesim.engine.linalg.multigrid import _sorted_pairs


def test_sorted_pairs_are_sorted_set_of_zip():
    rng = np.random.default_rng(3)
    for size in (0, 1, 50, 5000):
        first = rng.integers(-3, 4, size)
        second = rng.integers(-2, 3, size)
        expected = sorted({(int(a), int(b)) for a, b in zip(first, second)})
        assert _sorted_pairs(first, second) == expected
