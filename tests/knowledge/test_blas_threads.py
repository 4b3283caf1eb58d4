"""Theus runs numpy's BLAS on one thread (its workers fought the embedding model's for the
cores), unless the user set a count of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# What numpy's bundled OpenBLAS runs with, in a fresh process that imports recall first.
PROBE = """
import ctypes, glob, os
import knowledge.recall
import numpy
found = glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs",
                               "libscipy_openblas*"))
print(ctypes.CDLL(found[0]).scipy_openblas_get_num_threads64_())
"""
ROOT = Path(__file__).resolve().parents[2]


def blas_threads(**env: str) -> int:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=base | env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return int(done.stdout)


def test_blas_runs_on_one_thread() -> None:
    assert blas_threads() == 1


def test_the_users_own_count_stands() -> None:
    assert blas_threads(OPENBLAS_NUM_THREADS="2") == 2
