"""Backend "nccl" where it cannot run (no cupy, or no GPU): the module imports, the
availability answer is true to what imports, init_process_group raises torch 2.13's CPU
build's error for "nccl" and for "cpu:gloo,cuda:nccl", and the checks that run before any
GPU is touched (backend strings, the default timeout, the device a rank takes, CPU tensors
in a group without a CPU backend, the reduction rules, the Work's deadline)."""

import importlib.util
from datetime import timedelta
from types import SimpleNamespace

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed import _group, _nccl, _nccl_collectives, _watchdog


def _cupy_has_nccl() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        from cupy.cuda import nccl
    except Exception:  # noqa: BLE001
        return False
    return bool(getattr(nccl, "available", True))


def test_availability_is_true_to_what_imports():
    assert dist.is_nccl_available() is _cupy_has_nccl()
    assert _nccl_collectives.is_cuda(ember.ones(2)) is False


@pytest.mark.parametrize("backend", ["nccl", "NCCL", "cuda:nccl", "cpu:gloo,cuda:nccl"])
def test_nccl_without_it_raises_torchs_error(backend):
    if dist.is_nccl_available() and ember.cuda.is_available():
        pytest.skip("NCCL runs here: the multi-GPU tests cover it")
    # torch 2.13's CPU build: RuntimeError("Distributed package doesn't have NCCL built in")
    text = ("Distributed package doesn't have NCCL built in" if not dist.is_nccl_available()
            else "ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    with pytest.raises(RuntimeError, match=text):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


@pytest.mark.parametrize("backend,error", [("tcp", "Invalid backend"), ("cpu:nccl", "cuda tensors only"),
                                           ("gpu:nccl", "cpu and cuda"), ("cpu:gloo,cuda:tcp", "Invalid backend")])
def test_backend_strings_are_checked(backend, error):
    with pytest.raises(ValueError, match=error):
        _group._parse_backend(backend)


def test_backend_strings_without_nccl():
    assert _group._parse_backend(None) == ("mpi", False, True)
    assert _group._parse_backend("GLOO") == ("gloo", False, True)
    assert _group._parse_backend("cpu:gloo") == ("cpu:gloo", False, True)


def test_nccl_defaults_to_torchs_ten_minutes():
    assert _group._timeout(None, "nccl") == timedelta(minutes=10)
    assert _group._timeout(None, "gloo") == timedelta(minutes=30)
    assert _group._timeout(None, "cpu:gloo,cuda:nccl") == timedelta(minutes=30)


def test_the_device_a_rank_takes(monkeypatch):
    for name in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"):
        monkeypatch.delenv(name, raising=False)
    assert _nccl.local_device() == 0
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2")
    assert _nccl.local_device() == 2
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert _nccl.local_device() == 1
    assert _nccl.local_device(3) == 3 and _nccl.local_device(ember.device("cuda:2")) == 2
    with pytest.raises(ValueError, match="cuda device"):
        _nccl.local_device(ember.device("cpu"))


def test_a_cpu_tensor_in_a_nccl_group_raises_torchs_error():
    pg = _group.ProcessGroup(None, [0], "nccl", timedelta(seconds=5), nccl=None, cpu=False)
    for call in (lambda: dist.all_reduce(ember.ones(2), group=pg), lambda: dist.broadcast(ember.ones(2), 0, group=pg),
                 lambda: dist.all_gather([ember.ones(2)], ember.ones(2), group=pg),
                 lambda: dist.isend(ember.ones(2), 0, group=pg)):
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            call()


# NCCL's constants as cupy.cuda.nccl names them; numpy arrays stand in for cupy ones (the
# reduction plan only views, multiplies and reshapes)
_NCCL = SimpleNamespace(NCCL_SUM=0, NCCL_PROD=1, NCCL_MAX=2, NCCL_MIN=3, NCCL_UINT8=1, NCCL_FLOAT32=7,
                        NCCL_FLOAT64=8, NCCL_INT64=4)
_PG = SimpleNamespace(_nccl=SimpleNamespace(nccl=_NCCL, type_of=lambda name: getattr(_NCCL, _nccl.TYPES[name])))


def test_reductions_nccl_lacks_are_composed():
    R = dist.ReduceOp
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    send, recv, count, dtype, op, after = _nccl_collectives._reduction(_PG, x, R.AVG)
    assert (op, after, count, dtype) == (_NCCL.NCCL_SUM, "avg", 6, _NCCL.NCCL_FLOAT32) and send is recv
    send, recv, _, _, op, after = _nccl_collectives._reduction(_PG, x, dist._make_nccl_premul_sum(0.5))
    assert op == _NCCL.NCCL_SUM and after is None and send is not recv
    np.testing.assert_array_equal(send, x.reshape(-1) * 0.5)  # a scaled copy; the input stays
    flags = np.array([True, False])
    assert _nccl_collectives._reduction(_PG, flags, R.SUM)[3:5] == (_NCCL.NCCL_UINT8, _NCCL.NCCL_MAX)
    assert _nccl_collectives._reduction(_PG, flags, R.PRODUCT)[4] == _NCCL.NCCL_MIN
    z = np.ones(3, np.complex64)
    send, _, count, dtype, _, _ = _nccl_collectives._reduction(_PG, z, R.SUM)
    assert count == 6 and dtype == _NCCL.NCCL_FLOAT32  # pairs of reals
    with pytest.raises(RuntimeError, match="MAX on complex"):
        _nccl_collectives._reduction(_PG, z, R.MAX)
    for bitwise in (R.BAND, R.BOR, R.BXOR):
        with pytest.raises(ValueError, match=f"Cannot use ReduceOp.{bitwise.name} with NCCL"):
            _nccl_collectives._reduction(_PG, np.ones(2, np.int64), bitwise)
    with pytest.raises(ValueError, match="PREMUL_SUM needs its factor"):
        _nccl_collectives._reduction(_PG, x, R.PREMUL_SUM)


def test_all_to_all_splits_are_checked():
    rows = np.zeros((4, 3), np.int64)
    blocks = _nccl_collectives._splits([1, 3], rows, 2, "input")
    assert [b.size for b in blocks] == [24, 72]  # bytes
    with pytest.raises(ValueError, match="do not cover dim 0"):
        _nccl_collectives._splits([1, 2], rows, 2, "input")
    with pytest.raises(ValueError, match="not divisible"):
        _nccl_collectives._splits(None, np.zeros((3, 2)), 2, "input")


class _Stream:
    """A stream whose recorded event completes when the test says so."""

    def __init__(self):
        self.event = SimpleNamespace(done=False)

    def record(self):
        return self.event


def test_a_work_is_done_when_its_event_is_and_bounded_by_its_deadline():
    stream = _Stream()
    group = SimpleNamespace(_limit=0.05, rank=lambda: 0)
    work = _nccl.CudaWork(stream, group=group, name="all_reduce", seq=7)
    try:
        assert work in _watchdog._works and not work.is_completed()
        with pytest.raises(dist.DistBackendError, match=r"all_reduce \(sequence number 7\) did not complete"):
            work.wait()  # no watchdog thread here: the host polls the event against the deadline
        stream.event.done = True
        assert work.is_completed() and work.wait() and not work._keep
    finally:
        _watchdog._works.discard(work)
