"""Conformance entries for torch's settings and state functions, and its helpers on plain
Python objects.

Each entry sets a setting in its library, reads it back (and what it changes), and
restores what it found before it returns, also when it raises: the order of the tests
cannot matter.  dtypes, devices and modules come back as their names without the library
prefix, numbers with their type's name (``2 == 2.0`` must not pass), warnings as their
category and message.
"""

import math
import re
import warnings

import numpy as np
from op_table import Op, Sample


def _n(x):
    """A dtype, device or module as a name without the library prefix."""
    text = getattr(x, "__name__", None) if hasattr(x, "__file__") else None
    text = text or str(x)
    return re.sub(r"^(torch|ember)\.", "", text)


def _typed(values):
    return [(v, type(v).__name__) for v in values]


def _caught(fn):
    """fn's result and the warnings it gave: (category, message), torch's note on where
    its C++ code warned removed."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category.__name__, re.sub(r" \(Triggered internally at .*\)$", "", str(w.message), flags=re.S))
                 for w in seen]


def _entry(name, fn, errors=()):
    """An entry without array arguments; ``errors`` maps argument tuples to the
    exception type, for ``fn(L, *args)``."""
    return Op(name, fn, [Sample(())], grad=False, errors=[(Sample(args), exc) for args, exc in errors])


# ---- dtype and device defaults ------------------------------------------------------

def _default_dtype(L, bad=None):
    prev = L.get_default_dtype()
    try:
        if bad is not None:
            L.set_default_dtype("float64" if bad == "str" else getattr(L, bad))
        out = []
        for d in (L.float64, L.float16, L.bfloat16, L.float32):
            L.set_default_dtype(d)
            out.append([_n(x) for x in (L.get_default_dtype(), L.tensor([1.0]).dtype, L.tensor([1]).dtype,
                                        L.zeros(2).dtype, L.arange(3.0).dtype, L.tensor(2.5).dtype)])
        L.set_default_dtype(L.float64)
        out.append(_n(L.tensor([1j]).dtype))
        return out
    finally:
        L.set_default_dtype(prev)


def _default_device(L):
    try:
        out = [_n(L.get_default_device())]
        L.set_default_device("cpu")
        out += [_n(L.get_default_device()), _n(L.zeros(1).device)]
        L.set_default_device(None)
        out.append(_n(L.get_default_device()))
        return out
    finally:
        L.set_default_device(None)


# ---- threads ----------------------------------------------------------------------------

def _num_threads(L, bad=None):
    prev = L.get_num_threads()
    try:
        if bad is not None:
            L.set_num_threads(bad)
        out = []
        for n in (1, 2, 3):
            L.set_num_threads(n)
            out.append(L.get_num_threads())
        return out
    finally:
        L.set_num_threads(prev)


def _interop_threads(L, bad=None):
    # torch takes the inter-op count once per process, before any parallel work: only its
    # default and its argument check are compared
    if bad is not None:
        L.set_num_interop_threads(bad)
    try:
        L.set_num_interop_threads(-2)
        refused = None
    except RuntimeError as e:
        refused = type(e).__name__
    return [L.get_num_interop_threads(), refused]


def _thread_queries(L):
    return [L.init_num_threads(), L.compiled_with_cxx11_abi(), L.is_vulkan_available()]


# ---- grad, inference and anomaly modes -----------------------------------------------

def _grad_modes(L):
    prev = L.is_grad_enabled()
    try:
        out = [L.is_grad_enabled(), L.is_inference_mode_enabled()]
        with L.no_grad():
            out.append(L.is_grad_enabled())
            with L.enable_grad():
                out.append(L.is_grad_enabled())
        with L.set_grad_enabled(False):
            out.append(L.is_grad_enabled())
        L.set_grad_enabled(False)  # the function form
        out.append(L.is_grad_enabled())
        L.set_grad_enabled(True)
        with L.inference_mode():
            out += [L.is_inference_mode_enabled(), L.is_grad_enabled()]
            with L.inference_mode(False):
                out.append(L.is_inference_mode_enabled())
        out += [L.is_inference_mode_enabled(), L.is_grad_enabled()]
        return out
    finally:
        L.set_grad_enabled(prev)


def _anomaly(L, bad=None):
    prev = (L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled())
    try:
        if bad is not None:
            L.set_anomaly_enabled(*bad)
        out = [prev, L.set_anomaly_enabled(True), L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
        L.set_anomaly_enabled(True, False)
        out += [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
        L.set_anomaly_enabled(False, check_nan=True)
        out += [L.is_anomaly_enabled(), L.is_anomaly_check_nan_enabled()]
        return out
    finally:
        L.set_anomaly_enabled(*prev)


# ---- autocast state -------------------------------------------------------------------

def _autocast_state(L, bad=None):
    prev = [(d, L.is_autocast_enabled(d), L.get_autocast_dtype(d)) for d in ("cpu", "cuda")]
    prev_cache = L.is_autocast_cache_enabled()
    try:
        if bad == "enabled":
            L.set_autocast_enabled("cpu", 1)
        elif bad == "dtype":
            L.set_autocast_dtype("cpu", "float16")
        elif bad == "cache":
            L.set_autocast_cache_enabled(1)
        elif bad == "query":
            L.is_autocast_enabled(1)
        elif bad == "device":
            L.get_autocast_dtype("xyz")
        out = [L.is_autocast_enabled(), L.is_autocast_enabled("cpu"), _n(L.get_autocast_dtype("cpu")),
               _n(L.get_autocast_dtype("cuda")), L.is_autocast_cache_enabled()]
        L.set_autocast_enabled("cpu", True)
        L.set_autocast_dtype("cpu", L.float16)
        L.set_autocast_cache_enabled(False)
        out += [L.is_autocast_enabled("cpu"), _n(L.get_autocast_dtype("cpu")), L.is_autocast_cache_enabled()]
        L.set_autocast_enabled("cpu", False)
        L.set_autocast_enabled(True)  # the older one-argument form: cuda
        out += [L.is_autocast_enabled("cuda"), L.is_autocast_enabled()]
        L.set_autocast_enabled(False)
        out += [L.autocast_increment_nesting(), L.autocast_increment_nesting(), L.autocast_decrement_nesting(),
                L.autocast_decrement_nesting(), L.clear_autocast_cache()]
        with L.autocast("cpu", dtype=L.bfloat16):
            out += [L.is_autocast_enabled("cpu"), _n(L.get_autocast_dtype("cpu"))]
            with L.autocast("cpu", enabled=False):
                out.append(L.is_autocast_enabled("cpu"))
        out += [L.is_autocast_enabled("cpu"), _n(L.get_autocast_dtype("cpu"))]
        return out
    finally:
        for d, enabled, dtype in prev:
            L.set_autocast_enabled(d, enabled)
            L.set_autocast_dtype(d, dtype)
        L.set_autocast_cache_enabled(prev_cache)


def _autocast_spellings(spelling, has_enabled=True):
    """torch's deprecated per-device spellings: values, and the DeprecationWarning each
    call gives; the dtype and flag are restored through the same spellings."""
    def fn(L, bad=None):
        get_dtype = getattr(L, f"get_autocast_{spelling}_dtype")
        set_dtype = getattr(L, f"set_autocast_{spelling}_dtype")
        prev_dtype, _ = _caught(get_dtype)
        if has_enabled:
            is_on = getattr(L, f"is_autocast_{spelling}_enabled")
            set_on = getattr(L, f"set_autocast_{spelling}_enabled")
            prev_on, _ = _caught(is_on)
        try:
            if bad == "enabled":
                _caught(lambda: set_on(1))
            elif bad == "dtype":
                _caught(lambda: set_dtype("float16"))

            def calls():
                out = [_n(get_dtype()), set_dtype(L.float32), _n(get_dtype()), set_dtype(L.float16), _n(get_dtype())]
                if has_enabled:
                    out += [is_on(), set_on(True), is_on(), set_on(False), is_on()]
                return out
            return _caught(calls)
        finally:
            _caught(lambda: set_dtype(prev_dtype))
            if has_enabled:
                _caught(lambda: set_on(prev_on))
    errors = [(("dtype",), TypeError)] + ([(("enabled",), TypeError)] if has_enabled else [])
    return _entry(f"autocast_{spelling}_spellings", fn, errors)


# ---- determinism, precision, warnings, denormals ---------------------------------------

def _deterministic(L, bad=None):
    prev = (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled())

    def state():
        return (L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                L.get_deterministic_debug_mode())
    try:
        if bad is not None:
            kind, value = bad
            if kind == "mode":
                L.use_deterministic_algorithms(value)
            elif kind == "warn_only":
                L.use_deterministic_algorithms(True, warn_only=value)
            else:
                L.set_deterministic_debug_mode(value)
        out = [state()]
        for mode, warn_only in ((True, False), (True, True), (False, True), (False, False)):
            L.use_deterministic_algorithms(mode, warn_only=warn_only)
            out.append(state())
        for debug_mode in ("warn", "default", "error", 1, 0, 2, True, False):
            out.append((L.set_deterministic_debug_mode(debug_mode), state()))
        return out
    finally:
        L.use_deterministic_algorithms(prev[0], warn_only=prev[1])


def _matmul_precision(L, bad=None):
    prev = L.get_float32_matmul_precision()
    try:
        if bad is not None:
            L.set_float32_matmul_precision(bad)
        out = [prev]
        for p in ("high", "medium", "highest"):
            L.set_float32_matmul_precision(p)
            out.append(L.get_float32_matmul_precision())
        L.set_float32_matmul_precision("medium")
        out.append(_caught(lambda: (L.set_float32_matmul_precision("bogus"), L.get_float32_matmul_precision())))
        return out
    finally:
        L.set_float32_matmul_precision(prev)


def _warn_always(L, bad=None):
    prev = L.is_warn_always_enabled()
    try:
        if bad is not None:
            L.set_warn_always(bad)
        out = [prev, L.set_warn_always(True), L.is_warn_always_enabled()]
        L.set_warn_always(False)
        return out + [L.is_warn_always_enabled()]
    finally:
        L.set_warn_always(prev)


def _flush_denormal(L, bad=None):
    # the CPU's flush mode is one per thread, shared by both libraries: each run sets it
    # itself and leaves it off
    def flushed():
        return [(L.tensor([1e-310], dtype=L.float64) * 1).item() == 0.0,
                (L.tensor([1e-40], dtype=L.float32) + 0).item() == 0.0]
    try:
        if bad is not None:
            L.set_flush_denormal(bad)
        out = [flushed(), L.set_flush_denormal(True), flushed(), L.set_flush_denormal(False), flushed()]
        return out
    finally:
        L.set_flush_denormal(False)


def _printoptions(L):
    a, b, c = L.tensor([1.23456, 2.5, -300.0]), L.arange(12.0), L.tensor([1e-6, 1.0])
    try:
        out = []
        for opts in (dict(precision=2), dict(sci_mode=True), dict(threshold=5, edgeitems=2), dict(linewidth=24),
                     dict(profile="short"), dict(profile="full"), dict(precision=6, sci_mode=False)):
            L.set_printoptions(**opts)
            out.append([str(a), str(b), str(c)])
            L.set_printoptions(profile="default")
        return out + [[str(a), str(b), str(c)]]
    finally:
        L.set_printoptions(profile="default")


# ---- seeds and generator state ---------------------------------------------------------

def _rng(L, bad=None):
    prev_seed, prev = L.initial_seed(), L.get_rng_state()
    try:
        if bad == "float":
            L.set_rng_state(L.zeros(3))
        elif bad == "list":
            L.set_rng_state([1, 2])
        elif bad == "bytes":
            L.set_rng_state(L.zeros(3, dtype=L.uint8))
        g = L.manual_seed(7)
        out = [type(g).__name__, L.initial_seed()]
        a = L.rand(4)
        state = L.get_rng_state()
        b = L.rand(4)
        L.set_rng_state(state)
        c = L.rand(4)
        L.manual_seed(7)
        a2 = L.rand(4)
        out += [bool(L.equal(b, c)), bool(L.equal(a, a2)), bool(L.equal(a, b)), _n(state.dtype), state.dim(),
                state.is_contiguous()]
        s = L.seed()
        out += [type(s).__name__, L.initial_seed() == s, 0 <= s < 2 ** 64]
        L.manual_seed(-1)
        out.append(L.initial_seed())
        return out
    finally:
        L.manual_seed(prev_seed)
        L.set_rng_state(prev)


# ---- helpers on Python objects ---------------------------------------------------------

def _device_module(L, bad=None):
    if bad is not None:
        L.get_device_module(bad)
    return [_n(L.get_device_module("cpu")), _n(L.get_device_module()), _n(L.get_device_module(L.device("cpu"))),
            _n(L.get_device_module("cuda")), _n(L.get_device_module("cuda:0")), L.get_device_module("cpu") is L.cpu]


def _sym(L):
    return _typed([
        L.sym_int(-3.7), L.sym_int(True), L.sym_int(5), L.sym_int(2.9), L.sym_float(3), L.sym_float(True),
        L.sym_max(1, 2.0), L.sym_max(3, 2), L.sym_max(2.5, 1), L.sym_max(np.float32(1.5), 2),
        L.sym_max(np.int64(4), 2), L.sym_min(1, True), L.sym_min(4, 2.5), L.sym_min(np.int64(3), 7),
        L.sym_not(0), L.sym_not(True), L.sym_not(2.5), L.sym_sqrt(4), L.sym_sqrt(2.0), L.sym_sqrt(True),
        L.sym_sum([1, 2, 3]), L.sym_sum(1.5, 2), L.sym_sum([]), L.sym_sum((4,)), L.sym_sum(True, 2),
        L.sym_ite(True, 1, 2), L.sym_ite(False, "a", "b"), L.sym_fresh_size(5), L.sym_fresh_size(2.5),
        L.sym_constrain_range(3, min=1, max=5), L.sym_constrain_range(-5), L.sym_constrain_range(3.5, min=1),
        L.sym_constrain_range_for_size(0), L.sym_constrain_range_for_size(7, min=2, max=9)])


_SYM_ERRORS = [
    (lambda L: L.sym_ite(1, 1, 2), AssertionError), (lambda L: L.sym_ite(True, 1, 2.0), AssertionError),
    (lambda L: L.sym_max("a", 1), AssertionError), (lambda L: L.sym_min(1, None), AssertionError),
    (lambda L: L.sym_sqrt(-1), ValueError), (lambda L: L.sym_float("x"), ValueError),
    (lambda L: L.sym_int("x"), ValueError), (lambda L: L.sym_constrain_range(7, min=1, max=5), RuntimeError),
    (lambda L: L.sym_constrain_range(3, min=4), RuntimeError),
    (lambda L: L.sym_constrain_range_for_size(-1), RuntimeError),
    (lambda L: L.sym_constrain_range_for_size(5, max=4), RuntimeError),
    (lambda L: L.sym_constrain_range("a"), TypeError),
]


def _objects(L, bad=None):
    if bad is not None:
        L.is_distributed(bad)
    return [L.typename(L.ones(2)), L.typename(L.ones(2, dtype=L.int64)), L.typename(L.ones(1, dtype=L.bool)),
            L.typename(1), L.typename([1]), L.typename(int), L.typename(np.float32(1)), L.typename(math.sqrt),
            L.typename(re.compile("x")), L.typename(np.ndarray), L.typename(None),
            L.is_storage(L.ones(2)), L.is_storage([1]), L.is_storage(None), L.is_storage(np.zeros(2)),
            L.is_distributed(L.ones(2)), L.ones(2).is_distributed(), L.is_tensor(L.ones(2)), L.is_tensor(1)]


OPS = [
    _entry("default_dtype", _default_dtype, [(("int64",), TypeError), (("str",), TypeError), (("bool",), TypeError)]),
    _entry("default_device", _default_device),
    _entry("num_threads", _num_threads, [((0,), RuntimeError), ((1.5,), RuntimeError)]),
    _entry("num_interop_threads", _interop_threads, [((0,), RuntimeError)]),
    _entry("thread_and_build_queries", _thread_queries),
    _entry("grad_modes", _grad_modes),
    _entry("anomaly_state", _anomaly, [(((1,),), TypeError), (((True, 0),), TypeError)]),
    _entry("autocast_state", _autocast_state, [(("enabled",), TypeError), (("dtype",), TypeError),
                                               (("cache",), TypeError), (("query",), TypeError),
                                               (("device",), RuntimeError)]),
    _autocast_spellings("cpu"), _autocast_spellings("gpu", has_enabled=False), _autocast_spellings("ipu"),
    _autocast_spellings("xla"),
    _entry("deterministic_algorithms", _deterministic, [
        ((("mode", 1),), TypeError), ((("warn_only", 1),), TypeError), ((("debug", "x"),), RuntimeError),
        ((("debug", 3),), RuntimeError), ((("debug", -1),), RuntimeError), ((("debug", 1.0),), TypeError),
        ((("debug", None),), TypeError)]),
    _entry("float32_matmul_precision", _matmul_precision, [((1,), RuntimeError)]),
    _entry("warn_always", _warn_always, [((1,), RuntimeError)]),
    _entry("flush_denormal", _flush_denormal, [((1,), RuntimeError), (("yes",), RuntimeError)]),
    _entry("printoptions", _printoptions),
    _entry("rng_state", _rng, [(("float",), TypeError), (("list",), TypeError), (("bytes",), RuntimeError)]),
    _entry("get_device_module", _device_module, [((3,), RuntimeError), (("foo",), RuntimeError)]),
    _entry("sym_numbers", _sym),
    Op("sym_errors", lambda L, which: _SYM_ERRORS[which][0](L), [], grad=False,
       errors=[(Sample((i,)), exc) for i, (_, exc) in enumerate(_SYM_ERRORS)]),
    _entry("object_queries", _objects, [((1,), TypeError)]),
]
