"""ember's samplers against torch.utils.data's: same orders where deterministic, same
distributions where random, same errors."""

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as eud

LIBS = {"ember": (ember, eud), "torch": (torch, tud)}


def _gen(lib, seed):
    return lib.Generator().manual_seed(seed)


def test_sequential_sampler():
    for n in (0, 1, 7):
        e, t = eud.SequentialSampler(range(n)), tud.SequentialSampler(range(n))
        assert list(e) == list(t) and len(e) == len(t)


@pytest.mark.parametrize("kwargs", [dict(), dict(num_samples=23), dict(replacement=True),
                                    dict(replacement=True, num_samples=70)])
def test_random_sampler_reproducible_and_shaped_as_torch(kwargs):
    data = list(range(10))
    a = list(eud.RandomSampler(data, generator=_gen(ember, 4), **kwargs))
    b = list(eud.RandomSampler(data, generator=_gen(ember, 4), **kwargs))
    t = list(tud.RandomSampler(data, generator=_gen(torch, 4), **kwargs))
    assert a == b and len(a) == len(t) and all(0 <= i < 10 for i in a)
    assert list(eud.RandomSampler(data, generator=_gen(ember, 5), **kwargs)) != a


def test_random_sampler_with_replacement_is_uniform():
    n, draws = 5, 20000
    counts = np.bincount(list(eud.RandomSampler(range(n), replacement=True, num_samples=draws,
                                                generator=_gen(ember, 0))), minlength=n)
    p = 1 / n
    assert np.all(np.abs(counts / draws - p) < 5 * np.sqrt(p * (1 - p) / draws))


def test_subset_random_sampler():
    indices = [3, 9, 4, 17, 8]
    e = list(eud.SubsetRandomSampler(indices, generator=_gen(ember, 1)))
    t = list(tud.SubsetRandomSampler(indices, generator=_gen(torch, 1)))
    assert sorted(e) == sorted(t) == sorted(indices)
    assert e == list(eud.SubsetRandomSampler(indices, generator=_gen(ember, 1)))
    assert len(eud.SubsetRandomSampler(indices)) == len(tud.SubsetRandomSampler(indices)) == 5


@pytest.mark.parametrize("replacement", [True, False])
def test_weighted_random_sampler_frequencies(replacement):
    weights = [1.0, 2.0, 0.0, 4.0, 3.0]
    p = np.array(weights) / sum(weights)
    if replacement:
        draws = 20000
        s = eud.WeightedRandomSampler(weights, draws, generator=_gen(ember, 0))
        counts = np.bincount(list(s), minlength=5)
        assert counts[2] == 0
        assert np.all(np.abs(counts / draws - p) < 5 * np.sqrt(p * (1 - p) / draws) + 1e-12)
    else:
        # without replacement: the first pick follows the weights, the 4 non-zero indices appear once each
        trials = 1500
        firsts = np.zeros(5)
        for seed in range(trials):
            picks = list(eud.WeightedRandomSampler(weights, 4, replacement=False, generator=_gen(ember, seed)))
            assert sorted(picks) == [0, 1, 3, 4]
            firsts[picks[0]] += 1
        assert np.all(np.abs(firsts / trials - p) < 5 * np.sqrt(p * (1 - p) / trials) + 1e-12)


def test_weighted_random_sampler_attributes_equal_torch():
    e = eud.WeightedRandomSampler([1, 2, 3], 4)
    t = tud.WeightedRandomSampler([1, 2, 3], 4)
    assert str(e.weights.dtype).split(".")[-1] == str(t.weights.dtype).split(".")[-1] == "float64"
    assert e.weights.tolist() == t.weights.tolist() and len(e) == len(t) == 4
    assert e.replacement is t.replacement is True
    a = list(eud.WeightedRandomSampler([1, 2, 3], 6, generator=_gen(ember, 2)))
    assert a == list(eud.WeightedRandomSampler([1, 2, 3], 6, generator=_gen(ember, 2)))


@pytest.mark.parametrize("args,kwargs,exc,msg", [
    (([1.0, 2.0], 0), {}, ValueError, "num_samples should be a positive integer value"),
    (([1.0, 2.0], 2.0), {}, ValueError, "num_samples should be a positive integer value"),
    (([1.0, 2.0], True), {}, ValueError, "num_samples should be a positive integer value"),
    (([1.0, 2.0], 2), dict(replacement=1), ValueError, "replacement should be a boolean value"),
    (([[1.0, 2.0]], 2), {}, ValueError, r"weights should be a 1d sequence but given weights have shape \(1, 2\)"),
])
def test_weighted_random_sampler_errors(args, kwargs, exc, msg):
    for _, data in LIBS.values():
        with pytest.raises(exc, match=msg):
            data.WeightedRandomSampler(*args, **kwargs)


@pytest.mark.parametrize("weights,n,replacement", [([1.0, -1.0], 2, True), ([1.0, 2.0], 3, False),
                                                   ([1.0, float("nan")], 1, True)])
def test_weighted_random_sampler_iteration_errors(weights, n, replacement):
    for _, data in LIBS.values():
        with pytest.raises(RuntimeError):
            list(data.WeightedRandomSampler(weights, n, replacement=replacement))


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False),
                                                    (0, 2, False)])
def test_batch_sampler(n, batch_size, drop_last):
    e = eud.BatchSampler(eud.SequentialSampler(range(n)), batch_size, drop_last)
    t = tud.BatchSampler(tud.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(e) == list(t) and len(e) == len(t)


def test_batch_sampler_errors():
    for _, data in LIBS.values():
        for bs in (0, -1, 2.0, True):
            with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
                data.BatchSampler(range(4), bs, False)
        with pytest.raises(ValueError, match="drop_last should be a boolean value"):
            data.BatchSampler(range(4), 2, 1)


@pytest.mark.parametrize("n", [1, 3, 10, 11, 12])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_partition_equals_torch(n, replicas, drop_last):
    for rank in range(replicas):
        e = eud.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        t = tud.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(e) == list(t) and len(e) == len(t)
        assert (e.num_samples, e.total_size) == (t.num_samples, t.total_size)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (12, 4, False), (2, 5, False)])
def test_distributed_sampler_shuffle(n, replicas, drop_last):
    def shares(epoch, seed=0):
        out = []
        for rank in range(replicas):
            s = eud.DistributedSampler(range(n), replicas, rank, seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    a = shares(0)
    t = [list(tud.DistributedSampler(range(n), replicas, r, drop_last=drop_last)) for r in range(replicas)]
    assert [len(x) for x in a] == [len(x) for x in t]
    flat = sum(a, [])
    # every index once, padding repeats as many as torch's padding does
    assert sorted(set(flat)) == sorted(set(sum(t, []))) if not drop_last else len(set(flat)) == len(flat)
    assert len(flat) - len(set(flat)) == len(sum(t, [])) - len(set(sum(t, [])))
    assert shares(0) == a  # every replica draws the same permutation from seed + epoch
    if n > 3:
        assert shares(1) != a and shares(0, seed=1) != a


def test_distributed_sampler_errors():
    for _, data in LIBS.values():
        for rank in (-1, 3):
            with pytest.raises(ValueError, match=r"Invalid rank -?\d, rank should be in the interval \[0, 2\]"):
                data.DistributedSampler(range(5), num_replicas=3, rank=rank)
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            data.DistributedSampler(range(5))
