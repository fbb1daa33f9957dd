"""cmake --install puts the package in the prefix's site-packages; the prefix,
moved elsewhere, is importable by /usr/bin/python3 with nothing of the build
tree on the path (the module finds libattn.so by its RPATH)."""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

from conftest import REPO

BUILD = os.environ.get("ATTN_BUILD_DIR", str(REPO / "build"))


def test_installed_and_moved_prefix_imports(tmp_path):
    assert shutil.which("cmake"), "cmake is needed to install"
    subprocess.run(["cmake", "--install", BUILD, "--prefix", str(tmp_path / "p")], check=True, capture_output=True)
    (tmp_path / "p").rename(tmp_path / "moved")
    site = tmp_path / "moved" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert {"__init__.py", "_attn.pyi", "py.typed"} <= {p.name for p in (site / "attn").iterdir()}
    code = ("import attn, numpy as np; q = np.ones((1, 1, 2, 3), np.float32); "
            "print(attn.__file__); print(attn.dot_scores(q, q).sum())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [str(site / "attn" / "__init__.py"), "12.0"]
