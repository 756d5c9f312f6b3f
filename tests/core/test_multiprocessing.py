"""ember.multiprocessing against torch.multiprocessing: shared memory, tensors through queues
and process arguments, spawn's error reporting, Hogwild-style updates."""

import multiprocessing as std_mp
import os
import signal
import sys
import time
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
import torch.multiprocessing as torch_mp

import ember
import ember.multiprocessing as mp
import ember.nn as nn


def test_namespace_has_torchs_names():
    missing = [n for n in [*torch_mp.__all__, "spawn", "start_processes", "ProcessContext",
                           "ProcessRaisedException", "ProcessExitedException", "ProcessException"]
               if not hasattr(mp, n)]
    assert not missing


@pytest.mark.parametrize("index", [(slice(None),), (slice(1, None), 1), (slice(None), slice(0, 3, 2))])
def test_share_memory_keeps_values_and_layout(index):
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    e, t = ember.tensor(values)[index], torch.tensor(values)[index]
    assert e.is_shared() == t.is_shared() is False
    assert e.share_memory_() is e
    t.share_memory_()
    assert e.is_shared() and e._base is None or e._base.is_shared()
    assert e.stride() == t.stride() and e.storage_offset() == t.storage_offset()
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_module_share_memory_shares_every_parameter_and_buffer():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2)).share_memory()
    assert all(p.is_shared() and isinstance(p, nn.Parameter) for p in m.parameters())
    assert all(b.is_shared() for b in m.buffers())


def test_pickled_tensor_is_the_same_memory():
    """Through multiprocessing's pickler (as a queue sends it), a tensor comes back as a view
    of the same memory: writes on one side show on the other."""
    base = ember.zeros(4, 3)
    view = base[1:, 1]
    back = ForkingPickler.loads(ForkingPickler.dumps(view))
    assert base.is_shared() and back.is_shared()
    assert back.shape == view.shape and back.stride() == view.stride()
    back.fill_(7.0)
    assert base[1:, 1].tolist() == [7.0, 7.0, 7.0] and base[0].tolist() == [0.0, 0.0, 0.0]


def test_parameter_pickles_as_parameter():
    p = nn.Parameter(ember.ones(2))
    back = ForkingPickler.loads(ForkingPickler.dumps(p))
    assert type(back) is nn.Parameter and back.requires_grad
    frozen = ForkingPickler.loads(ForkingPickler.dumps(nn.Parameter(ember.ones(2), requires_grad=False)))
    assert not frozen.requires_grad


def test_non_leaf_requiring_grad_is_refused_as_torch():
    with pytest.raises(RuntimeError) as t_err:
        ForkingPickler.dumps(torch.ones(2, requires_grad=True) * 2)
    with pytest.raises(RuntimeError) as e_err:
        ForkingPickler.dumps(ember.ones(2, requires_grad=True) * 2)
    assert str(e_err.value) == str(t_err.value)


def test_sharing_strategy():
    assert mp.get_sharing_strategy() == "file_descriptor" == torch_mp.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() <= torch_mp.get_all_sharing_strategies()
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError):
        mp.set_sharing_strategy("carrier pigeon")


# ---- across processes (spawned: the children import ember afresh) ------------------------

def _add_rank(rank, t, done):
    t[rank].add_(rank + 1)  # each child its own row: two read-modify-writes of one row could race
    done.put(rank)


def test_spawn_arguments_share_memory_with_the_parent():
    t = ember.zeros(2, 5)
    done = std_mp.get_context("spawn").SimpleQueue()
    mp.spawn(_add_rank, args=(t, done), nprocs=2)
    assert t.tolist() == [[1.0] * 5, [2.0] * 5]  # both children wrote into the parent's tensor
    assert sorted([done.get(), done.get()]) == [0, 1]


def _echo(rank, inbox, outbox, release):
    x = inbox.get()
    x.mul_(10)  # in place: the parent's tensor
    outbox.put(ember.arange(3) + rank)  # a new tensor, in the child's shared memory
    release.get()  # stay alive until the parent has mapped it (torch's rule for queues)


def test_tensors_through_queues_both_ways():
    ctx = mp.get_context("spawn")
    inbox, outbox, release = ctx.Queue(), ctx.Queue(), ctx.Queue()
    job = mp.spawn(_echo, args=(inbox, outbox, release), nprocs=1, join=False)
    sent = ember.ones(2, 2)[:, 1]
    inbox.put(sent)
    got = outbox.get(timeout=60)
    release.put(None)
    assert job.join(timeout=60)
    assert sent.tolist() == [10.0, 10.0]
    assert got.tolist() == [0, 1, 2] and got.dtype == ember.int64


def _fails(rank):
    if rank == 1:
        raise ValueError("rank one cannot go on")
    time.sleep(60)  # ended by the parent once rank 1 failed


def _exits(rank, how):
    if how == "code":
        sys.exit(3)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_failing_process_ends_the_job_with_its_traceback():
    start = time.monotonic()
    with pytest.raises(mp.ProcessRaisedException) as err:
        mp.spawn(_fails, nprocs=2)
    assert time.monotonic() - start < 50  # the sleeping rank was ended, not waited for
    assert err.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(err.value)
    assert 'raise ValueError("rank one cannot go on")' in str(err.value)


@pytest.mark.parametrize("how,message", [("code", "process 0 terminated with exit code 3"),
                                         ("signal", "process 0 terminated with signal SIGKILL")])
def test_an_exiting_process_is_reported(how, message):
    ctx = mp.start_processes(_exits, args=(how,), nprocs=1, join=False, start_method="fork")
    assert len(ctx.pids()) == 1
    with pytest.raises(mp.ProcessExitedException, match=message) as err:
        while not ctx.join():
            pass
    assert err.value.exit_code == (3 if how == "code" else -signal.SIGKILL)


def test_spawn_with_another_start_method_warns_as_torch():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(_add_rank, args=(ember.zeros(1), std_mp.get_context("spawn").SimpleQueue()), nprocs=1,
                 start_method="fork")


def _hogwild(rank, model, steps):
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    x = ember.ones(1, 3)
    for _ in range(steps):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


def test_hogwild_processes_train_one_shared_model():
    """Each process takes SGD steps on the shared parameters; the bias's gradient is 1 at
    every step, so after 2 processes x 4 steps it moved by exactly 8 * lr."""
    model = nn.Linear(3, 1).share_memory()
    bias = model.bias.item()
    mp.start_processes(_hogwild, args=(model, 4), nprocs=2, start_method="fork")
    assert model.bias.item() == pytest.approx(bias - 8 * 0.05, abs=1e-6)
