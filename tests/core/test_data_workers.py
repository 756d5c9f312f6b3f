"""ember's DataLoader with worker processes against torch's: same batches, seeds, errors."""

import gc
import multiprocessing
import os
import pickle
import random
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from conftest import assert_same
from torch.utils.data._utils.worker import _generate_state

import ember
import ember.utils.data as eud

LIBS = {"ember": (ember, eud), "torch": (torch, tud)}


def _same_batches(e, t):
    """Same nesting, container types and tensors (exactly)."""
    if isinstance(t, torch.Tensor):
        assert_same(e, t, rtol=0, atol=0)
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            _same_batches(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t)
        for a, b in zip(e, t):
            _same_batches(a, b)
    else:
        assert e == t and type(e) is type(t)


def _no_children():
    gc.collect()
    deadline = time.time() + 10
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


# ---- datasets (module level, so that the spawn start method can pickle them) ----------

class Squares:
    """Sample i: a float tensor [i, i*i], the label i % 3, a dict with a numpy array."""

    def __init__(self, lib, n=13, slow=None, fail_at=None, exc=ValueError, die_at=None, sleep_at=None):
        self.lib, self.n, self.slow, self.fail_at, self.exc = lib, n, slow, fail_at, exc
        self.die_at, self.sleep_at = die_at, sleep_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise self.exc("bad sample %d" % i)
        if i == self.die_at:
            os._exit(3)
        if self.sleep_at is not None and i in self.sleep_at:
            time.sleep(self.sleep_at[i])
        return (self.lib.tensor([float(i), float(i * i)]), i % 3,
                {"a": np.full(2, i, dtype=np.int32), "name": f"s{i}"})


class WhoAmI:
    """Sample i: what the worker that loaded it knows about itself and its random streams."""

    def __init__(self, lib_name, n=4):
        self.lib_name, self.n = lib_name, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        lib, data = LIBS[self.lib_name]
        info = data.get_worker_info()
        return {"id": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "same_dataset": type(info.dataset) is WhoAmI, "pid": os.getpid(), "init": _init_mark,
                "py": random.random(), "np": np.random.random_sample(), "lib": lib.rand(1).item()}


_init_mark = -1


class TwoArgError(Exception):
    """An exception that cannot be rebuilt from a single message."""

    def __init__(self, msg, code):
        super().__init__(msg, code)


def two_arg_error(msg):
    return TwoArgError(msg, 7)


def mark_init(worker_id):
    global _init_mark
    _init_mark = 100 + worker_id


class Shards:
    """An IterableDataset over range(n), split evenly between workers via get_worker_info."""

    @staticmethod
    def make(data, n, shard=True):
        class S(data.IterableDataset):
            def __iter__(self):
                info = data.get_worker_info()
                lo, hi = 0, n
                if shard and info is not None:
                    per = -(-n // info.num_workers)
                    lo, hi = info.id * per, min(n, (info.id + 1) * per)
                for i in range(lo, hi):
                    yield np.int64(i)

            def __len__(self):
                return n
        return S()


# ---- batches ----------------------------------------------------------------------------

@pytest.mark.parametrize("workers,batch_size,prefetch,drop_last", [
    (1, 4, None, False), (2, 3, 1, True), (2, 1, 3, False), (2, None, None, False)])
def test_map_dataset_batches_equal_torch(workers, batch_size, prefetch, drop_last):
    kw = dict(batch_size=batch_size, num_workers=workers, prefetch_factor=prefetch, drop_last=drop_last)
    el, tl = eud.DataLoader(Squares(ember), **kw), tud.DataLoader(Squares(torch), **kw)
    assert len(el) == len(tl)
    _same_batches(list(el), list(tl))
    _no_children()


def test_custom_sampler_batch_sampler_and_collate_with_workers():
    order = [5, 0, 12, 7, 3, 3, 9]
    for kw in (dict(sampler=order, batch_size=2), dict(batch_sampler=[[4, 1], [2], [0, 11, 6]]),
               dict(sampler=order, batch_size=3, collate_fn=lambda b: len(b))):
        e = list(eud.DataLoader(Squares(ember), num_workers=2, **kw))
        t = list(tud.DataLoader(Squares(torch), num_workers=2, **kw))
        if "collate_fn" in kw:
            assert e == t
        else:
            _same_batches(e, t)
    _no_children()


def test_generator_shuffle_same_with_and_without_workers():
    def run(workers):
        g = ember.Generator().manual_seed(5)
        loader = eud.DataLoader(Squares(ember), batch_size=4, shuffle=True, generator=g, num_workers=workers)
        return [b[1].tolist() for b in loader]
    assert run(2) == run(0)


def test_batch_of_images_crosses_cheaply():
    t = ember.randn(64, 3, 32, 32)
    assert len(pickle.dumps(t)) < t.nbytes + 1024  # the raw buffer, not one object per element
    loader = eud.DataLoader(eud.TensorDataset(t), batch_size=32, num_workers=2)
    got = ember.cat([b[0] for b in loader])
    assert got.dtype == t.dtype and (got == t).all().item()


# ---- worker info and seeds ----------------------------------------------------------------

def test_worker_info_and_seeds_follow_torch_rules():
    g = ember.Generator().manual_seed(3)
    batches = list(eud.DataLoader(WhoAmI("ember"), batch_size=None, num_workers=2, generator=g,
                                  worker_init_fn=mark_init))
    tb = list(tud.DataLoader(WhoAmI("torch"), batch_size=None, num_workers=2, worker_init_fn=mark_init))
    assert [b["id"] for b in batches] == [b["id"] for b in tb] == [0, 1, 0, 1]
    base = batches[0]["seed"]
    for b in batches[:2]:  # the first draw of each worker
        seed = base + b["id"]
        assert b["seed"] == seed and b["num_workers"] == 2 and b["same_dataset"]
        assert b["init"] == 100 + b["id"] and b["pid"] != os.getpid()
        assert b["py"] == random.Random(seed).random()
        assert b["np"] == np.random.RandomState(_generate_state(base, b["id"])).random_sample()
        assert b["lib"] == ember.rand(1, generator=ember.Generator().manual_seed(seed)).item()
    # torch's workers follow the same rules
    tbase = tb[0]["seed"]
    assert tb[1]["seed"] == tbase + 1
    assert tb[1]["np"] == np.random.RandomState(_generate_state(tbase, 1)).random_sample()
    # the base seed comes from the generator
    again = list(eud.DataLoader(WhoAmI("ember"), batch_size=None, num_workers=2,
                                generator=ember.Generator().manual_seed(3)))
    assert [b["seed"] for b in again] == [b["seed"] for b in batches]
    assert eud.get_worker_info() is None and tud.get_worker_info() is None
    _no_children()


def test_worker_info_is_read_only():
    info = eud._worker.WorkerInfo(id=0, num_workers=1, seed=1, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        info.id = 3
    assert repr(info) == "WorkerInfo(id=0, num_workers=1, seed=1, dataset=None)"


def test_persistent_workers_keep_processes_between_epochs():
    results = {}
    for name, (_, data) in LIBS.items():
        loader = data.DataLoader(WhoAmI(name, n=6), batch_size=2, num_workers=2, persistent_workers=True)
        epochs = [list(loader) for _ in range(2)]
        results[name] = [[b["id"].tolist() for b in e] for e in epochs]
        pids = [{p for b in e for p in b["pid"].tolist()} for e in epochs]
        assert pids[0] == pids[1] and len(pids[0]) == 2
        assert len(loader) == 3
        next(iter(loader))  # an epoch left early: its in-flight batches must not leak into the next
        assert [b["id"].tolist() for b in loader] == results[name][0]
        del loader, epochs
    assert results["ember"] == results["torch"]
    _no_children()


def test_spawn_context():
    # the dataset and worker_init_fn travel by pickle; ember's own classes keep the child's imports small
    x = ember.arange(10.0).view(5, 2)
    loader = eud.DataLoader(eud.TensorDataset(x), batch_size=2, num_workers=1, multiprocessing_context="spawn",
                            worker_init_fn=abs)
    assert isinstance(loader.multiprocessing_context, multiprocessing.context.SpawnContext)
    assert ember.cat([b[0] for b in loader]).tolist() == x.tolist()
    _no_children()


# ---- order --------------------------------------------------------------------------------

@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_out_of_order_arrivals_are_reordered(lib_name):
    lib, data = LIBS[lib_name]
    ds = Squares(lib, n=6, sleep_at={0: 0.4})
    got = [b[1].item() for b in data.DataLoader(ds, batch_size=1, num_workers=2)]
    assert got == [0, 1, 2, 0, 1, 2]
    firsts = [b[0][0, 0].item() for b in data.DataLoader(ds, batch_size=1, num_workers=2, in_order=False)]
    assert sorted(firsts) == [0, 1, 2, 3, 4, 5] and firsts[0] != 0
    _no_children()


# ---- iterable datasets ------------------------------------------------------------------

@pytest.mark.parametrize("shard,batch_size,drop_last", [(True, 3, False), (True, 3, True), (False, 4, False),
                                                        (True, None, False)])
def test_iterable_dataset_across_workers_equals_torch(shard, batch_size, drop_last):
    kw = dict(batch_size=batch_size, drop_last=drop_last, num_workers=2)
    e = list(eud.DataLoader(Shards.make(eud, 11, shard), **kw))
    t = list(tud.DataLoader(Shards.make(tud, 11, shard), **kw))
    _same_batches(e, t)
    if shard and not drop_last:
        assert sorted(x for b in e for x in np.atleast_1d(b.tolist())) == list(range(11))
    _no_children()


def test_iterable_length_warning_with_workers():
    for data in (eud, tud):
        # each worker yields all 4 samples: 8 batches of one sample against a reported length of 4
        loader = data.DataLoader(Shards.make(data, 4, shard=False), batch_size=None, num_workers=2)
        assert len(loader) == 4
        with pytest.warns(UserWarning, match="For multiprocessing data-loading"):
            list(loader)
    _no_children()


# ---- errors -------------------------------------------------------------------------------

def _torch_reraise(exc):
    """What torch's DataLoader raises in the parent for ``exc`` caught in worker 0."""
    from torch.utils.data._utils import ExceptionWrapper
    try:
        raise exc
    except Exception:
        wrapper = ExceptionWrapper(where="in DataLoader worker process 0")
    try:
        wrapper.reraise()
    except Exception as e:
        return e


# torch's own loader is used where its workers stop promptly; torch's error paths keep the
# iterator in a reference cycle for a while, so there its in-process ExceptionWrapper is the oracle.
def test_worker_exception_reraised_with_traceback():
    it = iter(eud.DataLoader(Squares(ember, fail_at=3), batch_size=1, num_workers=2))
    assert [next(it)[1].item() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError) as info:
        next(it)
    msg = str(info.value)
    assert msg.startswith("Caught ValueError in DataLoader worker process 1.\nOriginal Traceback "
                          "(most recent call last):\n")
    assert "__getitem__" in msg and msg.rstrip().endswith("ValueError: bad sample 3")
    expected = str(_torch_reraise(ValueError("bad sample 3")))
    assert expected.split("\n")[1:2] == msg.split("\n")[1:2]
    assert expected.rstrip().endswith("ValueError: bad sample 3")
    del info
    assert [next(it)[1].item() for _ in range(2)] == [1, 2]  # the loader goes on after an error
    del it
    _no_children()


@pytest.mark.parametrize("exc", [KeyError, two_arg_error, OSError])
def test_worker_exception_types(exc):
    loader = eud.DataLoader(Squares(ember, fail_at=0, exc=exc), batch_size=2, num_workers=1)
    expected = _torch_reraise(exc("bad sample 0"))
    with pytest.raises(type(expected), match="Caught .* in DataLoader worker process 0") as info:
        list(loader)
    assert str(info.value).split("\n")[0] == str(expected).split("\n")[0]
    assert repr(info.value).startswith(repr(expected)[:40])
    del info
    _no_children()


def test_worker_init_fn_error():
    def bad_init(worker_id):
        raise OSError(f"init {worker_id}")
    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0") as info:
        list(eud.DataLoader(Squares(ember), num_workers=1, worker_init_fn=bad_init))
    assert "OSError: init 0" in str(info.value)
    del info
    _no_children()


def test_early_break_leaves_no_workers():
    loader = eud.DataLoader(Squares(ember, n=40), batch_size=2, num_workers=2)
    for i, _ in enumerate(loader):
        if i == 1:
            break
    _no_children()
    it = iter(loader)
    next(it)
    assert len(multiprocessing.active_children()) == 2
    del it
    _no_children()


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_worker_death_is_detected(lib_name):
    lib, data = LIBS[lib_name]
    start = time.time()
    # torch words it "(pid(s) N)" when the result queue finds the worker dead, and
    # "(pid N) ... with exit code 3" when its SIGCHLD handler gets there first: a race.
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid(\(s\))? \d+\) exited unexpectedly"):
        list(data.DataLoader(Squares(lib, die_at=2), batch_size=1, num_workers=2))
    assert time.time() - start < 8
    _no_children()


@pytest.mark.parametrize("lib_name", ["ember", "torch"])
def test_timeout(lib_name):
    lib, data = LIBS[lib_name]
    loader = data.DataLoader(Squares(lib, sleep_at={0: 0.6}), batch_size=1, num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(loader)
    _no_children()


def test_option_errors_match_torch():
    ds = list(range(5))
    for data in (eud, tud):  # a timeout needs workers: iterating without them fails
        with pytest.raises(AssertionError, match="requires timeout == 0"):
            iter(data.DataLoader(ds, timeout=1.0))
    cases = [
        (dict(num_workers=0, prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be non-negative"),
        (dict(num_workers=0, persistent_workers=True), ValueError, "persistent_workers option needs num_workers"),
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(num_workers=1, timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(num_workers=0, multiprocessing_context="fork"), ValueError, "can only be used with multi-process"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, "should specify a valid start method"),
        (dict(num_workers=1, multiprocessing_context=3), TypeError, "should be a valid context object"),
    ]
    for kw, exc, msg in cases:
        for data in (eud, tud):
            with pytest.raises(exc, match=msg):
                data.DataLoader(ds, **kw)


def test_loader_attributes_and_pin_memory():
    e = eud.DataLoader(Squares(ember), batch_size=5, num_workers=2, pin_memory=True)
    t = tud.DataLoader(Squares(torch), batch_size=5, num_workers=2, pin_memory=True)
    assert e.prefetch_factor == t.prefetch_factor == 2 and len(e) == len(t) == 3
    assert e.multiprocessing_context is None and e.pin_memory is True
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true"):
        eb = list(e)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true"):
        tb = list(t)
    _same_batches(eb, tb)
    ctx = multiprocessing.get_context("fork")
    assert eud.DataLoader([1], num_workers=1, multiprocessing_context=ctx).multiprocessing_context is ctx
    it = iter(eud.DataLoader(Squares(ember), num_workers=1))
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(it)
    del it
    _no_children()
