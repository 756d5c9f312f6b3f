"""ember: a deep-learning framework with PyTorch's API, on numpy (CPU) and cupy (CUDA).

``import ember as torch`` runs PyTorch programs that use the parts ember implements.
"""

from . import _allocator, _numpy_warnings, autograd, ops, return_types  # noqa: F401
from ._blas import get_num_threads, set_num_threads
from ._device import device, get_default_device, get_device_module, set_default_device
from ._dtype import (
    bfloat16,
    can_cast,
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from ._dtype import bool_ as bool  # noqa: A001  (torch.bool)
from ._errors import OutOfMemoryError
from ._layout import layout, sparse_coo, strided
from ._legacy import TENSOR_TYPES as _TENSOR_TYPES
from ._memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format
from ._queries import _assert, get_device, is_distributed, is_storage, typename
from ._settings import (
    are_deterministic_algorithms_enabled,
    compiled_with_cxx11_abi,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    init_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_vulkan_available,
    is_warn_always_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_warn_always,
    use_deterministic_algorithms,
)
from ._sym import (
    sym_constrain_range,
    sym_constrain_range_for_size,
    sym_float,
    sym_fresh_size,
    sym_int,
    sym_ite,
    sym_max,
    sym_min,
    sym_not,
    sym_sqrt,
    sym_sum,
)
from ._tensor import Size, Tensor
from ._tensor_str import set_printoptions
from ._type_info import finfo, iinfo
from .amp._deprecated import STATE_FUNCTIONS as _AUTOCAST_SPELLINGS
from .amp.autocast_mode import (  # noqa: F401
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled  # noqa: F401
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops import *  # noqa: F401,F403
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

# Ops that torch offers as Tensor methods only (x.view(...), x.float(), x.cuda()...).
for _name in ("to", "float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool",
              "type_as", "cpu", "cuda", "contiguous", "view", "view_as", "reshape_as", "expand", "expand_as",
              "repeat", "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty", "uniform_", "normal_",
              "bernoulli_", "copy_", "add_", "sub_", "mul_", "div_", "pow_", "neg_", "exp_", "log_", "sqrt_",
              "tanh_", "sigmoid_", "clamp_", "clip_", "eq_", "masked_fill_", "scatter_", "scatter_add_",
              "index_put_", "fill_", "zero_", "abs_", "unfold", "fill_diagonal_", "put_", "index_reduce_", "renorm_",
              "resize_", "sum_to_size", "new_empty_strided", "apply_", "map_", "map2_"):
    globals().pop(_name, None)
del _name
globals().update(_AUTOCAST_SPELLINGS)  # get_autocast_cpu_dtype() ..., deprecated in torch
from ._dtype import bfloat16  # noqa: E402,F811,A001
from ._dtype import bool_ as bool  # noqa: E402,F811,A001

# the legacy typed tensor classes: ember.FloatTensor([1, 2]), isinstance(t, ember.LongTensor)
FloatTensor, DoubleTensor, HalfTensor = _TENSOR_TYPES["FloatTensor"], _TENSOR_TYPES["DoubleTensor"], \
    _TENSOR_TYPES["HalfTensor"]
BFloat16Tensor, LongTensor, IntTensor = _TENSOR_TYPES["BFloat16Tensor"], _TENSOR_TYPES["LongTensor"], \
    _TENSOR_TYPES["IntTensor"]
ShortTensor, CharTensor, ByteTensor, BoolTensor = _TENSOR_TYPES["ShortTensor"], _TENSOR_TYPES["CharTensor"], \
    _TENSOR_TYPES["ByteTensor"], _TENSOR_TYPES["BoolTensor"]

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

from . import version  # noqa: E402
from .version import __version__  # noqa: E402


def is_tensor(obj) -> "builtins.bool":
    """True when ``obj`` is an ember Tensor (a subclass counts) (torch.is_tensor)."""
    return isinstance(obj, Tensor)


def numel(input) -> "builtins.int":
    """The number of elements of the tensor ``input``, as an int (torch.numel)."""
    return input.numel()


def is_floating_point(input) -> "builtins.bool":
    """True when ``input``'s dtype is a floating one (float16, bfloat16, float32, float64)
    (torch.is_floating_point)."""
    return input.dtype.is_floating_point


def _lazy(name):
    import importlib
    return importlib.import_module(f".{name}", __name__)


def __getattr__(name):
    # subpackages that pull in more code load on first use
    if name in ("nn", "optim", "utils", "cuda", "backends", "testing", "serialization", "hub", "special", "linalg",
                "distributions", "fft", "amp", "compat", "cpu", "accelerator", "distributed", "profiler", "func",
                "multiprocessing", "sparse", "compiler", "_dynamo", "jit", "fx", "onnx", "futures"):
        return _lazy(name)
    if name == "compile":
        return _lazy("compiler").compile
    if name == "sparse_coo_tensor":
        return _lazy("sparse").sparse_coo_tensor
    if name in ("save", "load"):
        return getattr(_lazy("serialization"), name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


import builtins  # noqa: E402
