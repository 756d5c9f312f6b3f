"""How ember's functions reach a tracer: the ops through the dispatch seam, and the
functions the seam does not register (``nn.functional``'s forwarders, ``ember._assert``)
through trampolines of the same kind, swapped in only while something is traced.

A call whose arguments hold a Proxy is recorded as a ``call_function`` node of the
function the program called, instead of being run; any other call proceeds untouched (to
the other modes of the seam, then the op). ``nn.functional``'s calls are recorded in the
form torch's versions hand to ``__torch_function__``: its Python functions pass their
first arguments positionally and the rest as keywords with their defaults
(``relu(x, inplace = False)``), its C functions pass what they were given, and
``tanh``/``sigmoid`` are the Tensor methods.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
import types

from ..ops import _dispatch
from .proxy import _find_proxy

__all__ = ["ops_see_proxies"]

# name -> (how many leading arguments go positionally, the keywords that follow), as torch's
# Python functions of torch.nn.functional call handle_torch_function
_CALL_FORMS = {
    'adaptive_avg_pool2d': (2, ()), 'adaptive_avg_pool3d': (2, ()), 'adaptive_max_pool1d': (2, ('return_indices',)),
    'adaptive_max_pool1d_with_indices': (2, ('return_indices',)), 'adaptive_max_pool2d': (2, ('return_indices',)),
    'adaptive_max_pool2d_with_indices': (2, ('return_indices',)), 'adaptive_max_pool3d': (2, ('return_indices',)),
    'adaptive_max_pool3d_with_indices': (2, ('return_indices',)), 'affine_grid': (2, ('align_corners',)),
    'alpha_dropout': (1, ('p', 'training', 'inplace')),
    'batch_norm': (3, ('weight', 'bias', 'training', 'momentum', 'eps')),
    'binary_cross_entropy': (2, ('weight', 'size_average', 'reduce', 'reduction')),
    'binary_cross_entropy_with_logits': (2, ('weight', 'size_average', 'reduce', 'reduction', 'pos_weight')),
    'celu': (1, ('alpha', 'inplace')),
    'cosine_embedding_loss': (3, ('margin', 'size_average', 'reduce', 'reduction')),
    'cross_entropy': (2, ('weight', 'size_average', 'ignore_index', 'reduce', 'reduction', 'label_smoothing')),
    'ctc_loss': (4, ('blank', 'reduction', 'zero_infinity')), 'dropout': (1, ('p', 'training', 'inplace')),
    'dropout1d': (1, ('p', 'training', 'inplace')), 'dropout2d': (1, ('p', 'training', 'inplace')),
    'dropout3d': (1, ('p', 'training', 'inplace')), 'elu': (1, ('alpha', 'inplace')),
    'embedding': (2, ('padding_idx', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'sparse')),
    'embedding_bag': (2, (
        'offsets', 'max_norm', 'norm_type', 'scale_grad_by_freq', 'mode', 'sparse', 'per_sample_weights',
        'include_last_offset', 'padding_idx',
    )),
    'feature_alpha_dropout': (1, ('p', 'training', 'inplace')), 'fold': (3, ('dilation', 'padding', 'stride')),
    'fractional_max_pool2d': (2, ('output_size', 'output_ratio', 'return_indices', '_random_samples')),
    'fractional_max_pool2d_with_indices': (2, ('output_size', 'output_ratio', 'return_indices', '_random_samples')),
    'fractional_max_pool3d': (2, ('output_size', 'output_ratio', 'return_indices', '_random_samples')),
    'fractional_max_pool3d_with_indices': (2, ('output_size', 'output_ratio', 'return_indices', '_random_samples')),
    'gaussian_nll_loss': (3, ('full', 'eps', 'reduction')), 'glu': (1, ('dim',)),
    'grid_sample': (2, ('mode', 'padding_mode', 'align_corners')), 'group_norm': (2, ('weight', 'bias', 'eps')),
    'gumbel_softmax': (1, ('tau', 'hard', 'eps', 'dim')), 'hardsigmoid': (1, ('inplace',)),
    'hardswish': (1, ('inplace',)), 'hardtanh': (1, ('min_val', 'max_val', 'inplace')),
    'hinge_embedding_loss': (2, ('margin', 'size_average', 'reduce', 'reduction')),
    'huber_loss': (2, ('reduction', 'delta', 'weight')),
    'instance_norm': (1, ('running_mean', 'running_var', 'weight', 'bias', 'use_input_stats', 'momentum', 'eps')),
    'interpolate': (1, ('size', 'scale_factor', 'mode', 'align_corners', 'recompute_scale_factor', 'antialias')),
    'kl_div': (2, ('size_average', 'reduce', 'reduction', 'log_target')),
    'l1_loss': (2, ('size_average', 'reduce', 'reduction')), 'layer_norm': (2, ('weight', 'bias', 'eps')),
    'leaky_relu': (1, ('negative_slope', 'inplace')),
    'linear_cross_entropy': (3, ('linear_bias', 'weight', 'reduction', 'ignore_index', 'label_smoothing', 'options')),
    'local_response_norm': (2, ('alpha', 'beta', 'k')), 'log_softmax': (1, ('dim', '_stacklevel', 'dtype')),
    'lp_pool1d': (3, ('stride', 'ceil_mode')), 'lp_pool2d': (3, ('stride', 'ceil_mode')),
    'lp_pool3d': (3, ('stride', 'ceil_mode')),
    'margin_ranking_loss': (3, ('margin', 'size_average', 'reduce', 'reduction')),
    'max_pool1d': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_pool1d_with_indices': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_pool2d': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_pool2d_with_indices': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_pool3d': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_pool3d_with_indices': (2, ('stride', 'padding', 'dilation', 'ceil_mode', 'return_indices')),
    'max_unpool1d': (3, ('stride', 'padding', 'output_size')),
    'max_unpool2d': (3, ('stride', 'padding', 'output_size')),
    'max_unpool3d': (3, ('stride', 'padding', 'output_size')), 'mish': (1, ('inplace',)),
    'mse_loss': (2, ('size_average', 'reduce', 'reduction', 'weight')),
    'multi_head_attention_forward': (13, (
        'training', 'key_padding_mask', 'need_weights', 'attn_mask', 'is_causal', 'use_separate_proj_weight',
        'q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'static_k', 'static_v', 'average_attn_weights',
    )),
    'multi_margin_loss': (2, ('p', 'margin', 'weight', 'size_average', 'reduce', 'reduction')),
    'multilabel_margin_loss': (2, ('size_average', 'reduce', 'reduction')),
    'multilabel_soft_margin_loss': (2, ('weight', 'size_average', 'reduce', 'reduction')),
    'nll_loss': (2, ('weight', 'size_average', 'ignore_index', 'reduce', 'reduction')),
    'normalize': (1, ('p', 'dim', 'eps', 'out')),
    'poisson_nll_loss': (2, ('log_input', 'full', 'size_average', 'eps', 'reduce', 'reduction')),
    'relu': (1, ('inplace',)), 'relu6': (1, ('inplace',)), 'rms_norm': (2, ('weight', 'eps')),
    'rrelu': (1, ('lower', 'upper', 'training', 'inplace')), 'selu': (1, ('inplace',)), 'silu': (1, ('inplace',)),
    'smooth_l1_loss': (2, ('size_average', 'reduce', 'reduction', 'beta')),
    'soft_margin_loss': (2, ('size_average', 'reduce', 'reduction')),
    'softmax': (1, ('dim', '_stacklevel', 'dtype')), 'softmin': (1, ('dim', '_stacklevel', 'dtype')),
    'softsign': (1, ()), 'tanhshrink': (1, ()),
    'triplet_margin_loss': (3, ('margin', 'p', 'eps', 'swap', 'size_average', 'reduce', 'reduction')),
    'triplet_margin_with_distance_loss': (3, ('distance_function', 'margin', 'swap', 'reduction')),
    'unfold': (2, ('dilation', 'padding', 'stride')),
    'threshold': (3, ('inplace',)), 'pad': (2, ('mode', 'value')),
}
_METHOD_FORMS = frozenset({"tanh", "sigmoid"})  # torch's are ``input.tanh()``, ``input.sigmoid()``
# the functions that pick their ``_with_indices`` form when ``return_indices=True``
_WITH_INDICES = frozenset({"max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                           "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d"})
# node names after torch's function names where they differ from the public one
_NODE_NAMES = {"logsigmoid": "log_sigmoid", "threshold": "_threshold"}
# deprecated aliases torch traces through, recording what they call (interpolate)
_TRACED_THROUGH = frozenset({"upsample", "upsample_bilinear", "upsample_nearest"})

_functional: dict[int, tuple] = {}  # id(fn) -> (fn, name) for nn.functional's public functions
_signatures: dict[int, inspect.Signature] = {}


def _functional_name(fn) -> str | None:
    if not _functional:
        from ..nn import functional as F
        for name, obj in vars(F).items():
            if not name.startswith("_") and isinstance(obj, types.FunctionType):
                _functional.setdefault(id(obj), (obj, name))
    hit = _functional.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


def _bound(fn, impl, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults filled in (read from ``impl``, the
    copy that keeps the function's own code: the function itself may hold a trampoline)."""
    sig = _signatures.get(id(fn))
    if sig is None:
        sig = _signatures[id(fn)] = inspect.signature(impl)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def record(tracer, fn, impl, args: tuple, kwargs: dict):
    """Append the node for ``fn(*args, **kwargs)`` to ``tracer``'s graph and return its Proxy."""
    name = _functional_name(fn)
    if name is None:
        return tracer.create_proxy("call_function", fn, args, kwargs)
    if name in _METHOD_FORMS:
        bound = _bound(fn, impl, args, kwargs)
        return tracer.create_proxy("call_method", name, (next(iter(bound.values())),), {})
    form = _CALL_FORMS.get(name)
    if form is not None:
        bound = _bound(fn, impl, args, kwargs)
        if name in _WITH_INDICES and bound.get("return_indices") is True:
            # torch's dispatcher hands these calls to the _with_indices function
            from ..nn import functional as F
            name += "_with_indices"
            fn = getattr(F, name)
            form = _CALL_FORMS[name]
        values = list(bound.values())
        npos, keywords = form
        args, kwargs = tuple(values[:npos]), {k: bound[k] for k in keywords if k in bound}
    node_name = tracer.graph._target_to_str(_NODE_NAMES.get(name, name))  # the public name, not a private alias
    return tracer.create_proxy("call_function", fn, args, kwargs, name=node_name)


# Tensor's operators given a Proxy (``buffer * proxy``): torch records the Tensor method
# they stand for, as a call_method node of these names
_TENSOR_DUNDERS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__floordiv__": "__floordiv__",
    "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul", "__and__": "__and__", "__or__": "__or__",
    "__xor__": "__xor__", "__lshift__": "__lshift__", "__rshift__": "__rshift__", "__eq__": "eq", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__getitem__": "__getitem__",
    "__setitem__": "__setitem__", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ipow__": "pow_",
}
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _tensor_operator(op):
    """``(method name, operands)`` when the op was called by one of Tensor's operators
    (looked up the stack, through ember's own frames only), else None."""
    from .. import _tensor
    f = sys._getframe(2)
    while f is not None and f.f_code is not op.trampoline:
        f = f.f_back
    for _ in range(3):
        f = None if f is None else f.f_back
        if f is None or not f.f_code.co_filename.startswith(_EMBER_DIR):
            return None
        if f.f_code.co_filename == _tensor.__file__:
            code = f.f_code
            # Python 3.10's code objects have no co_qualname: a method of Tensor has it as self
            qualname = getattr(code, "co_qualname", None) or (
                f"Tensor.{code.co_name}" if code.co_argcount and isinstance(f.f_locals.get(code.co_varnames[0]),
                                                                           _tensor.Tensor) else "")
            name = _TENSOR_DUNDERS.get(qualname[len("Tensor."):]) if qualname.startswith("Tensor.") else None
            if name is None:
                return None
            return name, tuple(f.f_locals[v] for v in code.co_varnames[:code.co_argcount])
    return None


class _ProxyMode(_dispatch.Mode):
    """The seam's listener while tracing: an op given a Proxy becomes a node."""

    def __ember_op__(self, op, args, kwargs, proceed):
        proxy = _find_proxy(args, kwargs)
        if proxy is None or _functional_name(op.fn) in _TRACED_THROUGH:
            return proceed(args, kwargs)
        operator_call = _tensor_operator(op)
        if operator_call is not None:
            name, operands = operator_call
            return proxy.tracer.create_proxy("call_method", name, operands, {})
        return record(proxy.tracer, op.fn, op.impl, args, kwargs)


def _on_forwarder(entry, args, kwargs):
    proxy = _find_proxy(args, kwargs)
    if proxy is None:
        return entry.impl(*args, **kwargs)
    return record(proxy.tracer, entry.fn, entry.impl, args, kwargs)


_forwarders: list = []  # OpEntry objects of the unregistered functions, made once
_hooked = 0
_lock = threading.RLock()  # reentrant: a collected Proxy tracer's finalizer unhooks from inside _hook


def _forwarder_entries() -> list:
    if not _forwarders:
        import ember

        from ..nn import functional as F
        fns = [obj for name, obj in vars(F).items()
               if not name.startswith("_") and isinstance(obj, types.FunctionType)
               and obj.__module__ == F.__name__ and _dispatch.entry_of(obj) is None]
        fns.append(ember._assert)
        for fn in fns:  # entries the seam does not know: no mode but the tracer ever sees them
            entry = _dispatch.OpEntry(fn.__name__, fn)
            entry.trampoline = _dispatch._trampoline(entry, _on_forwarder)
            _forwarders.append(entry)
    return _forwarders


def _hook(delta: int) -> None:
    global _hooked
    with _lock:
        entries = _forwarder_entries()
        _hooked += delta
        if _hooked == 1 and delta > 0:
            for e in entries:
                e.fn.__code__ = e.trampoline
        elif _hooked == 0:
            for e in entries:
                e.fn.__code__ = e.code


@contextlib.contextmanager
def ops_see_proxies():
    """While inside, ember's ops and ``nn.functional``'s functions called with a Proxy
    record nodes on the Proxy's tracer (``Tracer.trace`` enters it; so does code that
    builds graphs by calling ember's functions on Proxies, as a Transformer does)."""
    mode = _ProxyMode()
    _hook(+1)
    try:
        with mode:
            yield
    finally:
        _hook(-1)
