"""Every op of ember, grouped by family; ``ember`` re-exports the public ones.

The namespace is built from the functions each family module defines itself (not what
it imports), so adding an op to a family is enough to publish it.
"""

import functools
import inspect
from types import FunctionType as _Function

from . import (
    _dispatch,
    _helpers,
    activation,
    calculus,
    complex_ops,
    construction,
    conv,
    conversion,
    creation,
    decompositions,
    elementwise,
    elementwise_math,
    householder,
    indexing,
    layout,
    linalg,
    loss,
    lowrank,
    matrix_forms,
    nn_low_level,
    norm,
    numerics,
    pool,
    products,
    python_map,
    reduction,
    rnn_flat,
    sample_stats,
    sampling,
    shape,
    solvers,
    spectral,
    statistics,
    upsample,
    view_copies,
    windows,
)

_FAMILIES = (conversion, creation, complex_ops, elementwise, elementwise_math, indexing, layout, linalg, reduction,
             shape, statistics, products, spectral, windows, python_map, nn_low_level, rnn_flat, activation, conv, loss,
             norm, pool, upsample, numerics, sample_stats, calculus, construction, view_copies, solvers, householder,
             matrix_forms, lowrank)


# the families of nn.functional: torch's top level holds only some of their functions (not
# those whose top-level form takes other arguments: embedding, ctc_loss, grid_sampler)
_NN_FAMILIES = (activation, conv, loss, norm, pool, upsample)
_NN_AT_TOP_LEVEL = {
    "alpha_dropout", "bilinear", "dropout", "feature_alpha_dropout", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "cosine_similarity", "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "pairwise_distance",
    "poisson_nll_loss", "triplet_margin_loss", "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d",
    "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d", "batch_norm", "group_norm", "instance_norm",
    "layer_norm", "rms_norm", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "alpha_dropout_", "dropout_",
    "feature_alpha_dropout_"}


def _public(module):
    nn_family = module in _NN_FAMILIES
    for name, obj in vars(module).items():
        if name.startswith("_") or (nn_family and name not in _NN_AT_TOP_LEVEL):
            continue
        if isinstance(obj, _Function) and (obj.__module__ == module.__name__ or name.endswith("_")):
            yield name, obj


def _with_out(fn):
    """``fn`` accepting torch's ``out=`` keyword (the result is written into it)."""
    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        return result if out is None else _helpers.write_out(result, out, fn.__name__)
    return with_out


# families whose ops are written without out=: it is added here, once; views, tuples of
# views and non-tensor results take none (as in torch)
_ADD_OUT = (elementwise_math, statistics, layout, products, complex_ops, spectral, numerics)
_NO_OUT = {"broadcast_shapes", "broadcast_tensors", "meshgrid", "tensor_split", "hsplit", "vsplit", "dsplit",
           "atleast_1d", "atleast_2d", "atleast_3d", "is_complex", "positive", "real", "imag", "resolve_conj",
           "view_as_real", "view_as_complex", "diagonal", "unfold", "as_strided", "ravel", "stft", "istft",
           "is_conj", "is_neg", "resolve_neg", "resize_", "resize_as_"}
for _m in _ADD_OUT:
    for _name, _obj in list(vars(_m).items()):
        if (isinstance(_obj, _Function) and not _name.startswith("_") and _obj.__module__ == _m.__name__
                and _name not in _NO_OUT and "out" not in inspect.signature(_obj).parameters):
            setattr(_m, _name, _with_out(_obj))

__all__ = []
for _m in _FAMILIES:
    for _name, _obj in _public(_m):
        globals()[_name] = _obj
        __all__.append(_name)
# aliases defined as assignments (true_divide = div, ...); helpers imported from
# elsewhere are not the family's own
for _m in _FAMILIES:
    for _name, _obj in vars(_m).items():
        if not _name.startswith("_") and isinstance(_obj, _Function) and _name not in globals() \
                and _obj.__module__ == _m.__name__ and (_m not in _NN_FAMILIES or _name in _NN_AT_TOP_LEVEL):
            globals()[_name] = _obj
            __all__.append(_name)

# helpers the families share with Tensor's methods (x[i], x[i] = v): not torch's names
for _name in ("broadcast_error", "complex_abs", "full_like_value", "getitem", "masked_grad", "scalar_like", "setitem"):
    __all__.remove(_name)

# torch's top level has these of torch.linalg's functions (inverse and pinverse renamed)
det, logdet, slogdet, matrix_power = decompositions.det, decompositions.logdet, decompositions.slogdet, \
    decompositions.matrix_power
inverse, pinverse = decompositions.inv, decompositions.pinv
__all__ += ["det", "inverse", "logdet", "matrix_power", "pinverse", "slogdet"]
from . import eigen  # noqa: E402

matrix_exp = eigen.matrix_exp
__all__ += ["matrix_exp"]

# sampling: torch.poisson and torch.binomial at the top level; the in-place samplers are Tensor methods only
poisson, binomial = sampling.poisson, sampling.binomial
exponential_, geometric_, log_normal_, cauchy_, random_ = (
    sampling.exponential_, sampling.geometric_, sampling.log_normal_, sampling.cauchy_, sampling.random_)
__all__ += ["poisson", "binomial"]

# torch's functions that take out= and whose ember ops are written without it (the Tensor
# methods, which take no out= in torch, keep the plain ops: see _tensor._install_methods)
_OUT_TOO = """addcdiv addcmul all amax amin bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift
bitwise_right_shift cumsum dot eq ne lt le gt ge greater greater_equal less less_equal not_equal gather index_select
isneginf isposinf lerp logical_and logical_or logical_xor logical_not logsumexp masked_select matrix_power mv
nan_to_num nonzero sort std var take_along_dim topk renorm index_reduce""".split()
for _name in _OUT_TOO:
    globals()[_name] = _with_out(globals()[_name])

# every op above passes through the dispatch seam when a mode listens (see _dispatch); the
# helpers taken out of __all__ are not ops, except indexing's two
_dispatch.register_namespace({name: globals()[name] for name in [*__all__, "getitem", "setitem"]})
