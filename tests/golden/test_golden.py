"""Golden IR dumps of the bundled models, reviewed like code.

Regenerate after an intended change with ``FUSEJIT_UPDATE_GOLDEN=1 python -m pytest
tests/golden`` and read the diff before committing it.
"""
import os
from pathlib import Path

import numpy as np
import pytest

import fusejit
from bench.models import MODELS, STATIC_ARGNAMES, load

HERE = Path(__file__).parent
UPDATE = os.environ.get("FUSEJIT_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    path = HERE / f"{name}.txt"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"missing golden file {path.name}: run with FUSEJIT_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} changed: diff it and regenerate if intended"


@pytest.mark.parametrize("stage", ["traced", "optimized"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_ir_matches_golden(name, stage):
    fn, make_inputs = load(name)
    compiled = fusejit.compile(fn, static_argnames=STATIC_ARGNAMES.get(name, ()))
    args, kwargs = make_inputs(dtype=np.float32, size="small")
    first = compiled.ir(*args, stage=stage, **kwargs)
    assert compiled.ir(*args, stage=stage, **kwargs) == first  # deterministic within a process
    check_golden(f"{name}.{stage}", first)
