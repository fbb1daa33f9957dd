"""docs/examples/python_attention.py runs: seed 002 with attn equals NumPy (the
script asserts it) and equals the C++ worked example (`attn explain --example
general-attention`); and the heatmap of the toy run's translation is drawn."""
import os
import re
import subprocess
import sys

import numpy as np

from conftest import REPO, run_cli

SCRIPT = REPO / "docs" / "examples" / "python_attention.py"


def test_example_runs_and_draws_the_heatmap(toy_run, tmp_path, attn_cli):
    png = tmp_path / "attention.png"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, str(SCRIPT), str(toy_run), str(png)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "seed 002: attn equals NumPy" in r.stdout
    assert f"drawn to {png}" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
    # the attention output rows the script printed, against the C++ worked example's matrix
    def matrix(text):
        return np.array([[float(v) for v in re.findall(r"-?\d+\.\d+", line)]
                         for line in text.splitlines() if line.strip().startswith("[")])
    cpp = run_cli(attn_cli, ["explain", "--example", "general-attention"])
    want = matrix(cpp.split("attention = weights V =")[1])
    got = matrix(r.stdout.split("attention output:")[1].split("\n\n")[0])[:4]
    assert want.shape == got.shape == (4, 3), (cpp, r.stdout)
    np.testing.assert_allclose(got, want, atol=1e-5)
