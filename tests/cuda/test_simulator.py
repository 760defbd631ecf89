"""The CUDA backend under Numba's simulator, in a subprocess (the simulator replaces
``numba.cuda`` at import and must not leak into this process)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cuda_simulator_suite():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "tests/cuda/sim_cases.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
