"""README's quick start is what CI runs, and its Python example works."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    command = re.search(r"^TEST_COMMAND='(.*)'$", ci, re.M).group(1)
    assert command in (ROOT / "README.md").read_text()


def test_readme_python_example_runs():
    readme = (ROOT / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(compile(example, "README.md", "exec"), namespace)
    sim = namespace["sim"]
    assert sim.step_count > 0 and sim.time > 0
