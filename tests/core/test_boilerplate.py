"""The lines PyTorch scripts carry before their real work (device checks, backend flags,
global settings, legacy types), answered as torch 2.13's CPU build answers them: the same
values, warnings and exception types. Documented deviations are asserted separately."""

import importlib.util
import warnings

import numpy as np
import pytest
import torch

import ember

# expressions whose value (or exception) must be torch's
SAME = """cuda.is_available()
cuda.device_count()
cuda.is_initialized()
cuda.empty_cache()
cuda.memory_allocated()
cuda.max_memory_allocated()
cuda.memory_reserved()
cuda.max_memory_reserved()
cuda.memory_stats()
cuda.is_bf16_supported()
cuda.get_arch_list()
cuda.get_device_name()
cuda.get_device_properties(0)
cuda.get_device_capability()
cuda.current_device()
cuda.synchronize()
cuda.mem_get_info()
cuda.init()
cuda.initial_seed()
cuda.manual_seed(0)
cuda.manual_seed_all(0)
cuda.seed()
cuda.get_rng_state()
cuda.get_rng_state_all()
cuda.set_rng_state_all([])
cuda.Stream()
cuda.Event()
cuda.Event(enable_timing=True)
cuda.current_stream()
cuda.default_stream()
cuda.stream(None).__enter__()
cuda.set_stream(None)
cuda.device(-1).__enter__()
cuda.device(0).__enter__()
cuda.device("cpu")
cuda.device("cuda:1").idx
cuda.device_of(ones(1)).idx
cuda.device_of(ones(1)).__enter__()
cuda.mem_get_info(0)
cuda.get_device_properties("cuda:0")
cuda.memory_allocated("cuda:0")
cuda.max_memory_allocated(0)
issubclass(cuda.OutOfMemoryError, RuntimeError)
OutOfMemoryError is cuda.OutOfMemoryError
cpu.is_available()
cpu.device_count()
cpu.current_device()
cpu.synchronize()
backends.mps.is_available()
backends.mps.is_built()
backends.cuda.is_built()
backends.cuda.matmul.allow_tf32
backends.cuda.matmul.allow_fp16_reduced_precision_reduction
backends.cuda.flash_sdp_enabled()
backends.cuda.mem_efficient_sdp_enabled()
backends.cuda.math_sdp_enabled()
backends.cudnn.is_available()
backends.cudnn.version()
backends.cudnn.allow_tf32
backends.mkldnn.enabled
accelerator.is_available()
accelerator.current_accelerator()
accelerator.device_count()
accelerator.current_device_index()
are_deterministic_algorithms_enabled()
is_deterministic_algorithms_warn_only_enabled()
get_float32_matmul_precision()
get_num_interop_threads()
distributed.is_initialized()
nn.attention.SDPBackend.FLASH_ATTENTION.value
nn.attention.SDPBackend.MATH.value
FloatTensor([1, 2]).dtype
LongTensor(3).shape
IntTensor(2, 3).shape
BoolTensor([True]).dtype
ByteTensor([1]).dtype
DoubleTensor().shape
isinstance(ones(2), FloatTensor)
isinstance(ones(2, dtype=int64), FloatTensor)
isinstance(ones(2, dtype=int64), LongTensor)
type(FloatTensor([1])) is Tensor
FloatTensor(ones(2)).dtype
FloatTensor(ones(2, dtype=int64))
ones(2).type()
tensor([1, 2]).type()
ones(2, dtype=bool).type()
ones(2).type(int64).dtype
ones(2).type("torch.DoubleTensor").dtype
ones(2).type(DoubleTensor).dtype
ones(2).type("torch.Nope")
isinstance(ones(1), autograd.Variable)
autograd.Variable(ones(2), requires_grad=True).requires_grad
type(autograd.Variable(ones(2))) is Tensor
nn.DataParallel(nn.Linear(2, 2)).device_ids
list(nn.DataParallel(nn.Linear(2, 2)).state_dict())
nn.DataParallel(nn.Linear(2, 3))(ones(4, 2)).shape
nn.parallel.DistributedDataParallel(nn.Linear(2, 2))""".splitlines()


class _Names(dict):
    """The names of ``lib`` as eval's locals, lazily imported subpackages included."""

    def __init__(self, lib):
        super().__init__()
        self.lib = lib

    def __getitem__(self, name):
        try:
            return getattr(self.lib, name)
        except AttributeError:
            raise KeyError(name) from None


def _eval(lib, code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = eval(code, {}, _Names(lib))
        except Exception as e:  # noqa: BLE001  (compared with torch's)
            return type(e)
    if isinstance(value, (torch.Size, ember.Size)):
        return ("size", tuple(value))
    if isinstance(value, (torch.dtype, ember.dtype)):
        return ("dtype", str(value).rsplit(".", 1)[-1])
    if isinstance(value, dict):  # memory_stats: an OrderedDict in torch, a dict in ember
        return dict(value)
    return value


@pytest.mark.parametrize("code", SAME)
def test_answers_as_torchs_cpu_build(code):
    import torch.nn.attention  # noqa: F401  (torch imports it lazily)
    expected = _eval(torch, code)
    assert _eval(ember, code) == expected, f"torch gives {expected!r}"


def test_torchs_assertion_message_without_cuda():
    for lib in (torch, ember):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
            lib.cuda.get_device_name()


def test_documented_deviations():
    # torch's CPU build says True to these; ember has no oneDNN or OpenMP, and its process
    # groups need mpi4py
    assert ember.backends.mkldnn.is_available() is False and torch.backends.mkldnn.is_available() is True
    assert ember.backends.openmp.is_available() is False
    assert ember.distributed.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    # torch's CPU build raises AttributeError here; ember lets programs that reset peaks run
    ember.cuda.reset_peak_memory_stats()
    with pytest.raises(AttributeError):
        torch.cuda.reset_peak_memory_stats()


@pytest.mark.parametrize("code,message", [
    ("cuda.amp.autocast()", r"`torch.cuda.amp.autocast\(args...\)` is deprecated"),
    ("cuda.amp.GradScaler()", r"`torch.cuda.amp.GradScaler\(args...\)` is deprecated"),
    ("cpu.amp.autocast()", r"`torch.cpu.amp.autocast\(args...\)` is deprecated"),
])
def test_deprecated_amp_spellings_warn_as_torch(code, message):
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match=message):
            eval(code, {}, _Names(lib))


def test_deprecated_cpu_autocast_still_casts():
    with pytest.warns(FutureWarning), ember.cpu.amp.autocast():
        assert ember.matmul(ember.ones(2, 2), ember.ones(2, 2)).dtype is ember.bfloat16


def test_global_settings_round_trip_and_errors():
    for lib in (torch, ember):
        lib.use_deterministic_algorithms(True, warn_only=True)
        assert lib.are_deterministic_algorithms_enabled() and lib.is_deterministic_algorithms_warn_only_enabled()
        lib.use_deterministic_algorithms(False)
        assert not lib.are_deterministic_algorithms_enabled()
        with pytest.raises(TypeError):
            lib.use_deterministic_algorithms("yes")
        lib.set_float32_matmul_precision("high")
        assert lib.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision("foo")
        assert lib.get_float32_matmul_precision() == "high"
        lib.set_float32_matmul_precision("highest")


def test_sdpa_kernel_switches_as_torch():
    import torch.nn.attention as tattn
    for lib, attn in ((torch, tattn), (ember, ember.nn.attention)):
        with attn.sdpa_kernel([attn.SDPBackend.MATH, attn.SDPBackend.FLASH_ATTENTION]):
            assert lib.backends.cuda.flash_sdp_enabled() and lib.backends.cuda.math_sdp_enabled()
            assert not lib.backends.cuda.mem_efficient_sdp_enabled()
        assert lib.backends.cuda.mem_efficient_sdp_enabled()
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with attn.sdpa_kernel(3):
                pass
        with pytest.warns(FutureWarning, match="sdp_kernel\\(\\)` is deprecated"):
            with lib.backends.cuda.sdp_kernel(enable_flash=False):
                assert not lib.backends.cuda.flash_sdp_enabled()


def test_data_parallel_on_one_device_runs_the_module():
    torch.manual_seed(0)
    t = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    e = ember.nn.DataParallel(ember.nn.Linear(3, 2))
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = torch.randn(4, 3)
    assert e.module.weight.tolist() == t.module.weight.tolist()
    np.testing.assert_allclose(e(ember.tensor(x.numpy())).detach().numpy(), t(x).detach().numpy(), rtol=1e-6)
    assert repr(e) == repr(t)


FACTORIES = ["zeros(2)", "ones(2)", "empty(2)", "full((2,), 1.0)", "tensor([1.0])", "as_tensor([1.0])", "arange(3)",
             "linspace(0, 1, 3)", "logspace(0, 1, 3)", "eye(2)", "rand(2)", "randn(2)", "randint(0, 3, (2,))",
             "randperm(3)", "scalar_tensor(1.0)", "hann_window(4)", "kaiser_window(4)", "nn.Linear(2, 2)"]


@pytest.mark.parametrize("code", FACTORIES)
def test_factories_honour_the_default_device(code):
    assert ember.get_default_device() == ember.device("cpu") and str(torch.get_default_device()) == "cpu"
    ember.set_default_device("cuda")
    try:
        assert ember.get_default_device() == ember.device("cuda")
        # without cupy a cuda tensor cannot be made: the factory tried to make one
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            eval(code, {}, _Names(ember))
        with ember.device("cpu"):  # an explicit block wins over the thread's default
            assert eval(code, {}, _Names(ember)) is not None
    finally:
        ember.set_default_device(None)
    assert eval(code, {}, _Names(ember)) is not None


def test_pinned_memory_without_an_accelerator():
    for lib in (torch, ember):
        t = lib.ones(2)
        assert t.is_pinned() is False
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            t.pin_memory()
