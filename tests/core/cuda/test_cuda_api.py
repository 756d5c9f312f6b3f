"""ember.cuda's device API on a GPU: device properties, the device context, streams and
events, the allocator's counters and out-of-memory error, bfloat16 tensors, autocast, and
the DataLoader's pinned batches. Expected values come from cupy's own queries or by hand."""

import numpy as np
import pytest

import ember

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

MIB = 1024 * 1024


def test_device_properties_under_torchs_names():
    import cupy
    raw = cupy.cuda.runtime.getDeviceProperties(0)
    props = ember.cuda.get_device_properties(0)
    assert props.name == raw["name"].decode().rstrip("\0") == ember.cuda.get_device_name(0)
    assert (props.major, props.minor) == (raw["major"], raw["minor"]) == ember.cuda.get_device_capability(0)
    assert props.total_memory == raw["totalGlobalMem"] and props.multi_processor_count == raw["multiProcessorCount"]
    assert props.L2_cache_size == raw["l2CacheSize"] and props.warp_size == 32
    assert repr(props).startswith(f"_CudaDeviceProperties(name='{props.name}', major={props.major}, ")
    assert ember.cuda.get_device_properties("cuda:0").total_memory == props.total_memory


def test_device_context_switches_and_restores():
    last = ember.cuda.device_count() - 1
    with ember.cuda.device(last):
        assert ember.cuda.current_device() == last
        x = ember.ones(2, device="cuda")  # a bare "cuda" is the current device
        assert x.device == ember.device("cuda", last) and ember.rand(2, device="cuda").device == x.device
    assert ember.cuda.current_device() == 0
    with ember.cuda.device_of(x):
        assert ember.cuda.current_device() == x.get_device() == last
    with ember.cuda.device_of(ember.ones(1)):  # a CPU tensor changes nothing
        assert ember.cuda.current_device() == 0


def test_work_on_a_side_stream_is_ordered_by_events():
    main = ember.cuda.current_stream()
    side = ember.cuda.Stream()
    assert side != main and side.device == ember.device("cuda", 0) and side.cuda_stream != 0
    x = ember.arange(1 << 20, dtype=ember.float64, device="cuda")  # its sum is exact in float64
    side.wait_stream(main)
    with ember.cuda.stream(side):
        assert ember.cuda.current_stream() == side
        y = (x * 2).sum()
    assert ember.cuda.current_stream() == main
    main.wait_stream(side)
    n = 1 << 20
    assert y.item() == float(n * (n - 1))
    side.synchronize()
    assert side.query() is True
    side.wait_event(ember.cuda.Event())  # an event never recorded: nothing to wait for
    with side:
        assert ember.cuda.current_stream() == side
    assert ember.cuda.current_stream() == main
    nested = ember.cuda.stream(side)
    with nested, nested:  # the same context entered twice
        assert ember.cuda.current_stream() == side
    assert ember.cuda.current_stream() == main


def test_events_time_the_work_between_them():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    a = ember.randn(1024, 1024, device="cuda")
    start.record()
    for _ in range(10):
        a = a @ a / 32
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        ember.cuda.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        ember.cuda.Event(enable_timing=True).elapsed_time(end)


def test_allocator_counters_follow_tensors():
    ember.cuda.synchronize()
    base = ember.cuda.memory_allocated()
    ember.cuda.reset_peak_memory_stats()
    x = ember.empty(MIB, dtype=ember.float32, device="cuda")  # 4 MiB, a multiple of the pool's 512 bytes
    assert ember.cuda.memory_allocated() == base + 4 * MIB
    assert ember.cuda.max_memory_allocated() == base + 4 * MIB
    assert ember.cuda.memory_reserved() >= base + 4 * MIB
    del x
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.max_memory_allocated() == base + 4 * MIB
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == base
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == base and stats["allocation.all.allocated"] >= 1


def test_running_out_of_memory_raises_torchs_error_and_leaves_the_pool_usable():
    free, total = ember.cuda.mem_get_info()
    with pytest.raises(ember.cuda.OutOfMemoryError, match=r"^CUDA out of memory\. Tried to allocate "):
        ember.empty(2 * total, dtype=ember.uint8, device="cuda")
    assert ember.cuda.memory_stats()["num_ooms"] >= 1
    assert ember.ones(3, device="cuda").sum().item() == 3.0


def test_bfloat16_tensors_compute_as_on_the_cpu():
    if not ember.cuda.is_bf16_supported():
        with pytest.raises(TypeError, match="bfloat16 cuda tensors need CuPy 14"):
            ember.ones(2, dtype=ember.bfloat16, device="cuda")
        return
    a = ember.randn(33, 17, generator=ember.Generator().manual_seed(0)).to(ember.bfloat16)
    b = ember.randn(17, 5, generator=ember.Generator().manual_seed(1)).to(ember.bfloat16)
    on_gpu = ((a.cuda() @ b.cuda()).relu() + 1).sum(dim=1)
    assert on_gpu.dtype == ember.bfloat16 and on_gpu.device.type == "cuda"
    expected = ((a.float() @ b.float()).relu() + 1).sum(dim=1)
    np.testing.assert_allclose(on_gpu.float().cpu().numpy(), expected.numpy(), rtol=3e-2, atol=3e-2)


def test_autocast_on_cuda_lowers_matrix_products():
    a, b = ember.randn(8, 8, device="cuda"), ember.randn(8, 8, device="cuda")
    with ember.autocast("cuda"):
        assert (a @ b).dtype == ember.float16
        assert ember.softmax(a, dim=-1).dtype == ember.float32
    if ember.cuda.is_bf16_supported():
        with ember.autocast("cuda", dtype=ember.bfloat16):
            assert (a @ b).dtype == ember.bfloat16


def test_loader_pins_batches():
    data = ember.utils.data.TensorDataset(ember.arange(10.0).reshape(5, 2), ember.arange(5))
    loader = ember.utils.data.DataLoader(data, batch_size=2, pin_memory=True)
    for features, labels in loader:
        assert features.is_pinned() and labels.is_pinned()
        on_gpu = features.to("cuda", non_blocking=True)
        assert np.array_equal(on_gpu.cpu().numpy(), features.numpy())


def test_an_op_mixing_devices_names_both():
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*(cpu.*cuda:0|cuda:0.*cpu)"):
        ember.ones(2) + ember.ones(2, device="cuda")


@pytest.mark.skipif(ember.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_tensor_moves_between_gpus():
    x = ember.arange(6.0, device="cuda:0")
    y = x.to("cuda:1", non_blocking=True)
    assert y.device == ember.device("cuda", 1) and y.cpu().tolist() == x.cpu().tolist()
    assert ember.cuda.current_device() == 0


def test_tf32_switch_sets_cupys_compute_type():
    import cupy
    from cupy._core import _routines_linalg as linalg
    ember.ones(1, device="cuda")  # the backend is loaded
    try:
        ember.backends.cuda.matmul.allow_tf32 = True
        assert cupy._core.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_TF32
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    assert cupy._core.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_FP32
