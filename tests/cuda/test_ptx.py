"""Every CUDA kernel the test cases generate compiles to PTX (cc 9.0) and assembles with
``ptxas -arch=sm_90 -v`` without spills. In a subprocess without the simulator (the simulator
and ``compile_ptx`` cannot share a process); the reports are kept in a temp dir."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ptxas_available() -> bool:
    from fusejit.codegen.numba_cuda import ptxas_path
    return ptxas_path() is not None


@pytest.mark.skipif(not _ptxas_available(), reason="ptxas not installed (numba-cuda[cu12])")
def test_every_kernel_assembles_for_sm90_without_spills():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = str(ROOT)
    out = Path(tempfile.mkdtemp(prefix="fusejit-ptx-reports-"))
    done = subprocess.run([sys.executable, "-m", "tests.cuda.ptx_cases", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1500)
    print(f"ptxas reports: {out}")
    print(done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-4000:]
