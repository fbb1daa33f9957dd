"""attn opens OpenBLAS at import, before a NumPy imported later initialises it
(Debian's libblas.so.3 is the same library), and warns when NumPy came first
with another core (attn/__init__.py)."""
import json
import os
import subprocess
import sys

PROBE = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as w:
    {imports}
print(json.dumps({{"blas": attn._blas(), "warnings": [str(x.message) for x in w]}}))
"""


def probe(imports):
    r = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_attn_first_gets_its_core_and_no_warning():
    p = probe("import attn, numpy")
    assert p["blas"]["core"].upper() == p["blas"]["wanted_core"], p
    assert not [w for w in p["warnings"] if "OpenBLAS" in w]


def test_numpy_first_warns_exactly_when_the_core_differs():
    p = probe("import numpy, attn")
    differs = p["blas"]["core"].upper() != p["blas"]["wanted_core"]
    warned = [w for w in p["warnings"] if "OpenBLAS was initialised before attn" in w]
    assert bool(warned) == differs, p
    if warned:
        assert p["blas"]["core"] in warned[0] and p["blas"]["wanted_core"] in warned[0]
