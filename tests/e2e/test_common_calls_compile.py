"""Calls that users write often and that ran the whole signature eagerly: each compiles now,
with the results and arguments eager NumPy gives, call after call (``check_calls``)."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same, check_calls


def _image(call, shape=(4, 6)):
    rng = np.random.default_rng(call)
    return rng.integers(0, 256, shape).astype(np.uint8)


def _data(shape, call):
    return np.random.default_rng(call + 10).standard_normal(shape)


def _compared_beyond_uint8(img):
    return (img < 256) & (img >= -1) | (img == 1000), img < 300, np.less_equal(-3, img)


def _compared_beyond_int8(img):
    signed = img.astype(np.int8)
    return (signed < 200) ^ (signed > -129), signed != 2**70


def _clipped_beyond_range(img):
    return (np.clip(img, 0, 300), np.clip(img, -5, 3), img.clip(max=999) * 2,
            np.clip(img.astype(np.int8), -1000, 1000), np.clip(img, -1, 256, out=img.copy()))


def _where_beyond_range(img):
    signed = img.astype(np.int8)
    return (np.where(img > 100, img, 1000), np.where(img > 100, -1, img),
            np.where(signed > 0, signed, 200))


INT_BOUNDS = [_compared_beyond_uint8, _compared_beyond_int8, _clipped_beyond_range,
              _where_beyond_range]


@pytest.mark.parametrize("fn", INT_BOUNDS, ids=[fn.__name__.strip("_") for fn in INT_BOUNDS])
def test_python_ints_beyond_an_integer_dtype_follow_numpy(fn):
    # NumPy 2 compares by the int's value, drops a clip bound the dtype cannot reach, and
    # casts np.where's int as C does (1000 -> 232): these ran eagerly ("out of the range")
    compiled = check_calls(fn, lambda call: (_image(call),))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2, info


def test_a_clip_bound_within_no_range_raises_numpys_error():
    compiled = fusejit.compile(lambda img: np.clip(img, 300, 400))
    with pytest.raises(OverflowError, match="300 out of bounds for uint8"):
        compiled(_image(0))


def _filled_with_a_traced_scalar(x):
    m = x.mean().item()
    return (np.full(x.shape, x.mean()), np.full((2, 3), fill_value=x.max(), dtype=None),
            np.full(x.shape, m) + x, np.full_like(x, m), np.full(3, x[0, 0] > 0))


def test_np_full_takes_a_traced_fill_without_a_dtype():
    # NumPy's full reads np.asarray(fill).dtype: a traced fill ran eagerly without dtype=,
    # and a .item() float traced again on every call
    compiled = check_calls(_filled_with_a_traced_scalar,
                           lambda call: (_data((2, 3), call),))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["traces"] == 1, info


def _parts_of_a_spectrum(z):
    spectrum = np.fft.fft(z)
    return np.abs(spectrum.real) + spectrum.imag ** 2, z.real * 2 - z.imag


def test_real_and_imag_attributes_compile_as_np_real_and_np_imag():
    def args(call):
        return (_data(8, call) + 1j * _data(8, call + 1),)

    compiled = check_calls(_parts_of_a_spectrum, args)
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_write_into_the_real_part_still_runs_eagerly():
    def doubled_real_part(z):
        part = z.real
        part *= 2          # writes into z: a replay would not
        return z

    compiled = check_calls(doubled_real_part, lambda call: (_data(4, call) + 1j,))
    assert compiled.cache_info()["eager_calls"] == 2


def _columns_by_mask_updated(a, m):
    a[:, m] -= 1
    b = a * 2
    picked = b[..., m]
    picked += 1            # a copy: b is unchanged
    return b, picked


def test_an_update_through_a_mask_on_a_later_axis_compiles():
    # NumPy's a[:, m] is a view of a temporary of its own: the write into it ran eagerly
    def args(call):
        return _data((5, 4), call), np.random.default_rng(call).standard_normal(4) > 0

    compiled = check_calls(_columns_by_mask_updated, args, calls=4)
    assert compiled.cache_info()["eager_calls"] == 0


def test_np_repeat_with_traced_counts_is_a_host_op():
    def repeated(x, k):
        return np.repeat(x * 3, k) + 1, x.repeat(k[0])

    def args(call):
        return _data(4, call), np.random.default_rng(call).integers(0, 3, 4)

    compiled = check_calls(repeated, args, calls=4)
    assert compiled.cache_info()["eager_calls"] == 0
    with pytest.raises(ValueError, match="negative"):
        compiled(np.ones(4), np.array([1, -1, 2, 0]))


def _update_both(a, b):
    a += 1
    b *= 2
    return a.sum() + b.sum()


def test_views_sharing_bounds_but_no_element_replay():
    # two columns of one array: np.may_share_memory says yes, np.shares_memory no
    compiled = fusejit.compile(_update_both)
    for call in range(3):
        want, got = _data((4, 4), call), _data((4, 4), call)
        assert_same(_update_both(want[:, 0], want[:, 1]), compiled(got[:, 0], got[:, 1]))
        assert_same(want, got)
    info = compiled.cache_info()
    assert info["aliased_calls"] == 0 and info["hits"] == 2, info


def test_views_sharing_elements_still_run_eagerly():
    compiled = fusejit.compile(_update_both)
    for call in range(3):
        want, got = _data((4, 4), call), _data((4, 4), call)
        assert_same(_update_both(want[:, 1:3], want[:, 2:]), compiled(got[:, 1:3], got[:, 2:]))
        assert_same(want, got)
    assert compiled.cache_info()["aliased_calls"] == 2


def _contiguous_first(x):
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
        x[0, 0] = -1.0   # only the copy is written
    return x * 2, x.flags["F_CONTIGUOUS"], np.isfortran(x.T + 1)


_LAYOUTS = {"C": lambda a: a, "view": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
            "F": np.asfortranarray}


def test_contiguity_flags_are_traced_and_each_layout_keeps_its_path():
    # x.flags ran the signature eagerly; now the answer holds for the arguments' layouts,
    # which the path keeps: a C-ordered view (the same key as a C array) takes a path of its own
    order = ["C", "view", "C", "view", "F", "F"]
    compiled = check_calls(
        _contiguous_first, lambda call: (_LAYOUTS[order[call]](_data((3, 4), call)),), calls=6)
    info = compiled.cache_info()
    assert (info["eager_calls"], info["signatures"], info["paths"], info["hits"]) == \
        (0, 2, 3, 3), info


def test_a_flag_no_layout_decides_runs_eagerly():
    compiled = check_calls(lambda x: x * 2 if x.flags.writeable else x, lambda call: (
        _data((2, 3), call),))
    assert compiled.cache_info()["eager_signatures"] == 1


def _safe_divisions(a, b, out):
    np.divide(1.0, b, out=out, where=b != 0)   # into an argument
    m = a > 0
    np.multiply(a, 3.0, out=a, where=m)        # in place
    return (np.divide(a, b, out=np.zeros_like(a), where=b != 0),
            np.divide(a, b, out=np.full(a.shape, np.nan, np.float32), where=m[:, :1] & (b != 0)),
            np.subtract(a, 1, out=np.zeros(a.shape), where=True),
            np.floor_divide(np.arange(a.size).reshape(a.shape), b.astype(np.int64),
                            out=np.zeros(a.shape, np.int64), where=b != 0))


def _masked_into_a_view(a, b):
    o = np.ones_like(a)
    np.add(a[:, 1:], b[:, 1:], out=o[:, 1:], where=b[:, 1:] > 0)
    return o


def _masked_integer_power(a):   # NumPy skips the negative exponent the mask leaves out
    e = np.where(a > 0, 2, -1)
    return np.power(np.arange(a.size).reshape(a.shape), e, out=np.zeros(a.shape, int),
                    where=e > 0)


def _masked_arguments(call):
    a, b = _data((3, 4), call), _data((3, 4), call + 1).round()
    a[0, 0], b[1, 1] = np.nan, 0.0
    return a, b, np.full((3, 4), -1.0)


@pytest.mark.parametrize("fn", [_safe_divisions, _masked_into_a_view, _masked_integer_power])
def test_a_ufunc_writing_where_a_mask_holds_into_out_compiles(fn, recwarn):
    # np.divide(a, b, out=o, where=b != 0) raised UnsupportedError; now the ufunc runs over
    # every element and only the masked ones are written (a quotient by zero is dropped)
    compiled = check_calls(fn, lambda call: _masked_arguments(call)[:fn.__code__.co_argcount])
    info = compiled.cache_info()
    eager = fn is _masked_integer_power   # its kernel would refuse the skipped exponent
    assert (info["eager_calls"], info["hits"]) == ((2, 0) if eager else (0, 2)), info
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def _scipy_cross_entropy(logits, labels):
    from scipy.special import logsumexp
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    return -logp[np.arange(len(labels)), labels].mean(), x_namespace(logits) is np


def x_namespace(x):   # in the body's file: the body's own numpy, ``is np`` as eagerly
    return x.__array_namespace__()


def test_array_api_code_gets_numpys_namespace_and_is_traced():
    # SciPy's logsumexp asks for x.__array_namespace__(), which ran the signature eagerly; the
    # proxy answers numpy, whose functions it traces
    compiled = check_calls(_scipy_cross_entropy, lambda call: (
        _data((4, 5), call), np.arange(4) % 5))
    assert compiled.cache_info()["eager_calls"] == 0


def _numpy_by_default(x, xp=np):
    return x * 2 if xp is np else x * 3


def _numpy_in_a_cell():
    xp = np

    def by_cell(x):
        return x * 2 if xp is np else x * 3
    return by_cell


def _numpy_imported(x):
    import numpy
    from numpy import zeros
    return x * 2 if numpy is np else x * 3, zeros(2)


def _numpy_passed(x, xp):
    return x * 2 if xp is np else x * 3


@pytest.mark.parametrize("fn, extra", [
    (_numpy_by_default, ()), (_numpy_in_a_cell(), ()), (_numpy_imported, ()),
    (_numpy_passed, (np,)), (_numpy_passed, (np.linalg,))],
    ids=["default", "cell", "import", "argument", "another-module"])
def test_numpy_is_numpy_in_the_body_however_it_comes(fn, extra):
    # the body's global np is fusejit's view of numpy while it is traced: numpy reached by
    # a default, a closure cell, an import or an argument was another object, and
    # ``xp is np`` took the other branch on every call
    compiled = check_calls(fn, lambda call: (_data((2, 3), call), *extra))
    assert compiled.cache_info()["eager_calls"] == 0


def test_round_of_a_python_float_argument_is_pythons():
    @fusejit.compile
    def rounded(x, lr):
        return x * 2, round(lr, 2), round(lr * 2, 1)

    x = np.ones(2)
    for lr in (0.1234, 2.675, -0.35, 1.7976931348623157e308, float("nan")):
        assert_same(rounded.__wrapped__(x, lr), rounded(x, lr))
    assert rounded.cache_info()["traces"] == 1


def _scipy_softmax(x):
    from scipy.special import softmax  # converts with copy=np._CopyMode.IF_NEEDED
    return softmax(x, axis=-1) * 2


def _contiguous_of_a_list(x):
    return x * np.ascontiguousarray([1.0, 2.0, 3.0]) + np.asfortranarray((x, x)).sum(0)


def _mean_of_items(x):
    import statistics
    return statistics.mean([x[k].item() for k in range(3)])   # ``type(v)(total)``


@pytest.mark.parametrize("fn", [_scipy_softmax, _contiguous_of_a_list, _mean_of_items])
def test_conversions_that_library_code_makes(fn):
    compiled = check_calls(fn, lambda call: (_data((3,), call),))
    assert type(compiled(np.ones(3))) is type(fn(np.ones(3)))
