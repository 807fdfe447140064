"""app/precompile.py: the job list covers every integrator (and its kernel variants) in
both float types and the collisions, and a cold cache is told from a warm one."""

import pytest

from ropesim import INTEGRATORS
from ropesim.app import precompile


def test_jobs_cover_every_integrator_and_the_collisions_in_both_float_types_longest_first():
    names = list(precompile.jobs())
    variants = [f"{name}-{variant}" for name, table in precompile.KERNEL_VARIANTS.items()
                for variant in table]
    expected = {f"{kind}:{dtype}" for kind in (*INTEGRATORS, "collisions", *variants)
                for dtype in precompile.DTYPES} | {"scenes"}
    assert set(names) == expected and len(names) == len(expected)
    costs = [precompile.COST_HINTS.get(name.split(":")[0], 1.0) for name in names]
    assert costs == sorted(costs, reverse=True) and names[0].startswith("collisions")


def test_a_cache_without_index_files_is_cold(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert precompile.cache_is_cold()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "kernel-12.py311.nbi").write_bytes(b"")
    assert not precompile.cache_is_cold()


def test_an_unknown_job_is_refused_with_the_allowed_names(capsys):
    with pytest.raises(SystemExit):
        precompile.main(["--run", "euler:float16"])
    err = capsys.readouterr().err
    assert "euler:float16" in err and "xpbd:float32" in err


@pytest.mark.parametrize("jobs", [0, -2, 1.5, True])
def test_a_bad_process_count_is_refused_by_name(jobs):
    with pytest.raises(ValueError, match=r"n_jobs: expected an integer >= 1"):
        precompile.precompile(jobs)


def test_a_bad_jobs_flag_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        precompile.main(["--jobs", "0"])
    assert "--jobs: expected an integer >= 1" in capsys.readouterr().err
