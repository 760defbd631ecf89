"""explain() for the dynamic cases of issue 4, pinned as golden text.

Regenerate with ``FUSEJIT_UPDATE_GOLDEN=1 python -m pytest tests/golden``; read the diff.
"""
import numpy as np

import fusejit
from tests.golden.test_golden import check_golden
from tests.oracle import assert_same

rng = np.random.default_rng(7)


def stable(text: str) -> str:
    """Drop the cache counters line: it depends on what else ran in this process."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith("cache:"))


def explain_after(fn, calls, name):
    compiled = fusejit.compile(fn)
    for args in calls:
        assert_same(fn(*args), compiled(*args))
    check_golden(f"explain.{name}", stable(str(compiled.explain(*calls[-1]))))
    return compiled


def two_branches(x):
    if x.sum() > 0:
        return np.tanh(x) * 2
    return np.exp(x) - 1


def halve_until_small(x):
    while np.abs(x).max() > 1:
        x = x / 2
    return x


def discounted(r, gamma):
    out, running = np.zeros_like(r), 0.0
    for t in reversed(range(r.shape[0])):
        if r[t] != 0:
            running = 0.0
        running = running * gamma + r[t]
        out[t] = running
    return out


def solve_and_sort(a, b):
    x = np.linalg.solve(a @ a.T + np.eye(a.shape[0]), np.tanh(b) * 2)
    return np.sort(x * x + 1)[::-1] - x.mean()


def positive_part(x):
    kept = x[x > 0]
    return kept * 2 / len(kept)   # Python reads the count: a shape guard


def train_step(w, x, y, lr):
    pred = x @ w
    w -= lr * (x.T @ (pred - y)) / len(y)
    return float(((pred - y) ** 2).mean())


def test_explain_two_branches():
    x = np.abs(rng.standard_normal(6)) + 0.1
    explain_after(two_branches, [(x,), (-x,), (x,)], "two_branches")


def test_explain_while_loop_past_max_traces():
    calls = [(scale * np.linspace(0.5, 1, 4),) for scale in (1, 3, 7, 15, 31, 63, 127, 255, 511)]
    explain_after(halve_until_small, calls, "while_loop")


def test_explain_policy_gradient_fallback():
    r = np.where(rng.random(100) < 0.2, 1.0, 0.0)
    explain_after(discounted, [(r, 0.99)], "policy_gradient")


def test_explain_host_ops():
    a, b = rng.standard_normal((4, 4)), rng.standard_normal(4)
    explain_after(solve_and_sort, [(a, b), (a, b)], "host_ops")


def test_explain_mask_shape_guard():
    x = rng.standard_normal(8)
    explain_after(positive_part, [(x,), (x,)], "mask")


def test_explain_training_step_without_guards():
    w, x, y = np.zeros(3), rng.standard_normal((8, 3)), rng.standard_normal(8)
    w_eager = w.copy()
    compiled = fusejit.compile(train_step)
    for _ in range(2):
        expected = train_step(w_eager, x, y, 0.1)
        assert_same(expected, compiled(w, x, y, 0.1))
        assert_same(w_eager, w)
    check_golden("explain.train_step", stable(str(compiled.explain(w, x, y, 0.1))))


def masks(x, h):
    h = h.copy()
    h[h < 0] = 0
    return x[x > 0] * 2, h


def inverse_twice(a):
    return np.linalg.inv(a) * 2


def test_explain_mask_read_and_write():
    x, h = rng.standard_normal(8), rng.standard_normal((3, 4))
    explain_after(masks, [(x, h), (x, h)], "mask_read_write")


def test_explain_after_a_call_that_raised():
    good = np.eye(3) * 2
    compiled = fusejit.compile(inverse_twice)
    assert_same(inverse_twice(good), compiled(good))
    try:
        compiled(np.zeros((3, 3)))
    except np.linalg.LinAlgError:
        pass
    else:
        raise AssertionError("a singular matrix must raise as it does in NumPy")
    assert_same(inverse_twice(good * 3), compiled(good * 3))
    check_golden("explain.raised", stable(str(compiled.explain(good))))
