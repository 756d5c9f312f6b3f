"""ember.utils.data against torch.utils.data: the same data gives the same batches."""

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from conftest import assert_same, to_ember

import ember
import ember.utils.data as eud

Point = collections.namedtuple("Point", ["x", "y"])


def _check_batch(e, t):
    """An ember batch equals a torch batch: same nesting, container types, tensors."""
    if isinstance(t, torch.Tensor):
        assert_same(e, t, rtol=0, atol=0)
    elif isinstance(t, dict):
        assert type(e).__name__ == type(t).__name__ and list(e) == list(t)
        for k in t:
            _check_batch(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e).__name__ == type(t).__name__ and len(e) == len(t)
        for a, b in zip(e, t):
            _check_batch(a, b)
    else:
        assert e == t and type(e) is type(t)


def _check_loaders(el, tl):
    eb, tb = list(el), list(tl)
    assert len(eb) == len(tb) == len(el) == len(tl)
    for a, b in zip(eb, tb):
        _check_batch(a, b)


class Samples:
    """A map-style dataset whose samples are built by ``make(i, lib)``, for both libraries."""

    def __init__(self, lib, n, make):
        self.lib, self.n, self.make = lib, n, make

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.make(i, self.lib)


def _rng_array(i, shape=(2, 3), dtype=np.float32):
    return np.random.default_rng(i).standard_normal(shape).astype(dtype)


SAMPLE_KINDS = {
    "tensor": lambda i, lib: lib.tensor(_rng_array(i)),
    "int_tensor_label": lambda i, lib: (lib.tensor(_rng_array(i)), i % 3),
    "numpy": lambda i, lib: _rng_array(i, (4,), np.float64),
    "numpy_scalar": lambda i, lib: np.int32(i),
    "float": lambda i, lib: i * 0.5,
    "int": lambda i, lib: i,
    "bool": lambda i, lib: i % 2 == 0,
    "str": lambda i, lib: f"s{i}",
    "dict": lambda i, lib: {"img": lib.tensor(_rng_array(i)), "label": i, "name": f"n{i}",
                            "meta": {"w": float(i), "arr": np.arange(i, i + 2)}},
    "ordered_dict": lambda i, lib: collections.OrderedDict(b=i, a=lib.tensor([i, i + 1])),
    "namedtuple": lambda i, lib: Point(lib.tensor([float(i)]), i),
    "list": lambda i, lib: [i, float(i), lib.tensor(i)],
    "nested_tuple": lambda i, lib: ((i, (f"x{i}", np.float32(i))), [lib.tensor([i, 2 * i])]),
    "bool_tensor": lambda i, lib: lib.tensor([i % 2 == 0, True]),
    "bfloat16": lambda i, lib: lib.tensor(_rng_array(i)).to(lib.bfloat16),
}


@pytest.mark.parametrize("kind", sorted(SAMPLE_KINDS))
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (1, False), (10, False)])
def test_sequential_batches_equal_torch(kind, batch_size, drop_last):
    make = SAMPLE_KINDS[kind]
    el = eud.DataLoader(Samples(ember, 10, make), batch_size=batch_size, drop_last=drop_last)
    tl = tud.DataLoader(Samples(torch, 10, make), batch_size=batch_size, drop_last=drop_last)
    _check_loaders(el, tl)


@pytest.mark.parametrize("kind", ["tensor", "dict", "numpy", "int", "namedtuple"])
def test_no_auto_batching_equals_torch(kind):
    make = SAMPLE_KINDS[kind]
    _check_loaders(eud.DataLoader(Samples(ember, 5, make), batch_size=None),
                   tud.DataLoader(Samples(torch, 5, make), batch_size=None))


def test_tensor_dataset_and_default_collate_direct():
    X = torch.randn(11, 3)
    y = torch.arange(11)
    tl = tud.DataLoader(tud.TensorDataset(X, y), batch_size=3)
    el = eud.DataLoader(eud.TensorDataset(to_ember(X), to_ember(y)), batch_size=3)
    _check_loaders(el, tl)
    batch = [(np.float64(1.5), 2, "a"), (np.float64(2.5), 3, "b")]
    _check_batch(eud.default_collate(batch), tud.default_collate(batch))
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        eud.TensorDataset(ember.zeros(3), ember.zeros(4))


def test_collate_errors_match_torch():
    for collate in (tud.default_collate, eud.default_collate):
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
            collate([[1, 2], [1]])
        with pytest.raises(TypeError, match="default_collate: batch must contain"):
            collate([object(), object()])
        with pytest.raises(TypeError, match="default_collate: batch must contain"):
            collate([np.array(["a"]), np.array(["b"])])


def test_custom_collate_fn_and_batch_sampler():
    data = list(range(20))
    batches = [[3, 1], [0, 19, 4], [7]]
    fn = lambda b: sum(b)  # noqa: E731
    assert list(eud.DataLoader(data, batch_sampler=batches, collate_fn=fn)) == \
        list(tud.DataLoader(data, batch_sampler=batches, collate_fn=fn))
    e_bs = eud.BatchSampler(eud.SequentialSampler(data), 6, drop_last=False)
    t_bs = tud.BatchSampler(tud.SequentialSampler(data), 6, drop_last=False)
    assert list(e_bs) == list(t_bs) and len(e_bs) == len(t_bs)
    e_bs = eud.BatchSampler(range(20), 6, drop_last=True)
    t_bs = tud.BatchSampler(range(20), 6, drop_last=True)
    assert list(e_bs) == list(t_bs) and len(e_bs) == len(t_bs)


def test_shuffle_is_a_reproducible_permutation():
    data = list(range(50))
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    a = [b.tolist() for b in eud.DataLoader(data, batch_size=8, shuffle=True, generator=g1)]
    b = [b.tolist() for b in eud.DataLoader(data, batch_size=8, shuffle=True, generator=g2)]
    t = [b.tolist() for b in tud.DataLoader(data, batch_size=8, shuffle=True,
                                            generator=torch.Generator().manual_seed(7))]
    assert a == b
    assert [len(x) for x in a] == [len(x) for x in t]
    assert sorted(sum(a, [])) == sorted(sum(t, [])) == data
    assert sum(a, []) != data
    loader = eud.DataLoader(data, batch_size=8, shuffle=True)
    assert sum([x.tolist() for x in loader], []) != sum([x.tolist() for x in loader], [])


def test_random_sampler_options():
    data = list(range(10))
    for kwargs in (dict(), dict(num_samples=25), dict(num_samples=4), dict(replacement=True, num_samples=70)):
        es = list(eud.RandomSampler(data, generator=ember.Generator().manual_seed(1), **kwargs))
        ts = list(tud.RandomSampler(data, generator=torch.Generator().manual_seed(1), **kwargs))
        assert len(es) == len(ts) == len(eud.RandomSampler(data, **kwargs))
        assert all(0 <= i < 10 for i in es)
        if not kwargs.get("replacement"):
            # every full pass is a permutation
            for k in range(len(es) // 10):
                assert sorted(es[10 * k: 10 * k + 10]) == data
    for lib in (tud, eud):
        with pytest.raises(ValueError, match="num_samples should be a positive integer"):
            lib.RandomSampler(data, num_samples=0)
        with pytest.raises(TypeError, match="replacement should be a boolean"):
            lib.RandomSampler(data, replacement=1)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.33, 0.33, 0.34], [0.1] * 10,
                                     [0.34, 0.33, 0.33]])
def test_random_split_sizes_and_cover(lengths):
    data = list(range(10))
    e = eud.random_split(data, lengths, generator=ember.Generator().manual_seed(0))
    t = tud.random_split(data, lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in e] == [len(s) for s in t]
    assert sorted(x for s in e for x in s) == data
    e2 = eud.random_split(data, lengths, generator=ember.Generator().manual_seed(0))
    assert [list(s) for s in e] == [list(s) for s in e2]
    assert all(isinstance(s, eud.Subset) for s in e)


def test_random_split_errors():
    for lib in (tud, eud):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
            lib.random_split(list(range(10)), [3, 3])


def test_subset_and_concat_equal_torch():
    tds = [tud.TensorDataset(torch.arange(5.0)), tud.TensorDataset(torch.arange(10.0, 13.0))]
    eds = [eud.TensorDataset(to_ember(d.tensors[0])) for d in tds]
    tc, ec = tud.ConcatDataset(tds), eud.ConcatDataset(eds)
    assert len(ec) == len(tc) == 8 and ec.cumulative_sizes == tc.cumulative_sizes
    for i in list(range(8)) + [-1, -8]:
        _check_batch(ec[i], tc[i])
    for c in (tc, ec):
        with pytest.raises(ValueError, match="absolute value of index"):
            c[-9]
    ts, es = tud.Subset(tc, [7, 0, 5]), eud.Subset(ec, [7, 0, 5])
    _check_loaders(eud.DataLoader(es, batch_size=2), tud.DataLoader(ts, batch_size=2))
    _check_batch((eds[0] + eds[1])[6], (tds[0] + tds[1])[6])


class Stream:
    """An IterableDataset yielding ``n`` samples, built for either library."""

    def __init__(self, base, n):
        self.base, self.n = base, n

    def make(self):
        n = self.n

        class S(self.base):
            def __iter__(self):
                for i in range(n):
                    yield {"x": np.full(2, i, dtype=np.int64), "i": i}

            def __len__(self):
                return n
        return S()


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False), (5, False)])
def test_iterable_dataset_equals_torch(batch_size, drop_last):
    el = eud.DataLoader(Stream(eud.IterableDataset, 10).make(), batch_size=batch_size, drop_last=drop_last)
    tl = tud.DataLoader(Stream(tud.IterableDataset, 10).make(), batch_size=batch_size, drop_last=drop_last)
    _check_loaders(el, tl)


def test_option_errors_match_torch():
    data = list(range(10))
    for lib in (tud, eud):
        with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
            lib.DataLoader(data, sampler=lib.SequentialSampler(data), shuffle=True)
        with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
            lib.DataLoader(data, batch_sampler=[[0]], batch_size=2)
        with pytest.raises(ValueError, match="expected unspecified shuffle option"):
            lib.DataLoader(Stream(lib.IterableDataset, 3).make(), shuffle=True)
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            lib.BatchSampler(data, 0, False)
        with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
            lib.DataLoader(data, batch_size=None, drop_last=True)
        loader = lib.DataLoader(data)
        with pytest.raises(ValueError, match="attribute should not be set"):
            loader.batch_size = 3


def test_custom_sampler_and_len():
    data = [np.float32(i) for i in range(9)]
    order = [8, 2, 5, 1, 0, 3, 7, 6, 4]
    el = eud.DataLoader(data, sampler=order, batch_size=4)
    tl = tud.DataLoader(data, sampler=order, batch_size=4)
    _check_loaders(el, tl)


# ---- collate and convert on more element kinds -----------------------------------------

class FrozenMap(collections.abc.Mapping):
    """A read-only mapping type: collate rebuilds it from a dict."""

    def __init__(self, d=(), **kw):
        self.d = dict(d, **kw)

    def __getitem__(self, k):
        return self.d[k]

    def __iter__(self):
        return iter(self.d)

    def __len__(self):
        return len(self.d)


def _check_any(e, t):
    """Like _check_batch, for any mapping or sequence container."""
    if isinstance(t, torch.Tensor):
        assert_same(e, t, rtol=0, atol=0)
    elif isinstance(t, np.ndarray):
        assert type(e) is np.ndarray and e.dtype == t.dtype and (e == t).all()
    elif isinstance(t, collections.abc.Mapping):
        assert type(e).__name__ == type(t).__name__ and list(e) == list(t)
        if isinstance(t, collections.defaultdict):
            assert e.default_factory is t.default_factory
        for k in t:
            _check_any(e[k], t[k])
    elif isinstance(t, collections.abc.Sequence) and not isinstance(t, (str, bytes)) or \
            isinstance(t, collections.deque):
        assert type(e).__name__ == type(t).__name__ and len(e) == len(t)
        for a, b in zip(e, t):
            _check_any(a, b)
    else:
        assert e == t and type(e) is type(t)


COLLATE_BATCHES = {
    "bytes": lambda lib: [b"a", b"b"],
    "np_str": lambda lib: [np.str_("a"), np.str_("b")],
    "np_bool": lambda lib: [np.bool_(True), np.bool_(False)],
    "np_float16": lambda lib: [np.float16(1.5), np.float16(2)],
    "np_uint8": lambda lib: [np.uint8(3), np.uint8(4)],
    "np_0d": lambda lib: [np.array(1.5), np.array(2.5)],
    "np_complex": lambda lib: [np.complex64(1 + 2j), np.complex64(3j)],
    "np_int_arrays": lambda lib: [np.arange(3, dtype=np.int16), np.arange(3, 6, dtype=np.int16)],
    "defaultdict": lambda lib: [collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)],
    "mapping": lambda lib: [FrozenMap(a=1.0, b="x"), FrozenMap(a=2.0, b="y")],
    "tuple_of_str": lambda lib: [("a", 1), ("b", 2)],
    "range": lambda lib: [range(2), range(2)],
    "deque": lambda lib: [collections.deque([1, 2]), collections.deque([3, 4])],
    "nested_np_list": lambda lib: [[np.zeros(2), 1.0], [np.ones(2), 2.0]],
    "namedtuple_nested": lambda lib: [Point({"k": lib.tensor([1, 2])}, [i, "s"]) for i in range(3)],
    "ints_floats": lambda lib: [{"i": 1, "f": 1.5, "b": True}, {"i": 2, "f": 2.5, "b": False}],
}


@pytest.mark.parametrize("kind", sorted(COLLATE_BATCHES))
def test_collate_and_convert_equal_torch(kind):
    make = COLLATE_BATCHES[kind]
    _check_any(eud.default_collate(make(ember)), tud.default_collate(make(torch)))
    _check_any(eud.default_convert(make(ember)), tud.default_convert(make(torch)))


@pytest.mark.parametrize("batch", [[object(), object()], [None, None], [1 + 2j, 3j],
                                   [np.array([1, None], dtype=object)] * 2, [np.array(["a"])] * 2,
                                   [np.array([b"a"])] * 2])
def test_collate_type_errors_equal_torch(batch):
    with pytest.raises(TypeError) as t:
        tud.default_collate(batch)
    with pytest.raises(TypeError) as e:
        eud.default_collate(batch)
    assert str(e.value) == str(t.value)
    # default_convert keeps them as they are, as torch
    _check_any(eud.default_convert(batch), tud.default_convert(batch))


def test_collate_unequal_shapes_and_lengths():
    for lib, data in ((torch, tud), (ember, eud)):
        with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
            data.default_collate([lib.zeros(2), lib.zeros(3)])
        with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
            data.default_collate([(1, 2), (3,)])
        with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
            data.default_collate([np.zeros(2), np.zeros(3)])


# ---- datasets ---------------------------------------------------------------------------

def _stream(data, values):
    class S(data.IterableDataset):
        def __iter__(self):
            return iter(values)

        def __len__(self):
            return len(values)
    return S()


def test_chain_dataset_equals_torch():
    for data in (tud, eud):
        chained = data.ChainDataset([_stream(data, [1, 2]), _stream(data, [3])])
        assert list(chained) == [1, 2, 3] and len(chained) == 3
        added = _stream(data, [5]) + _stream(data, [6, 7])
        assert isinstance(added, data.ChainDataset) and list(added) == [5, 6, 7]
        bad = data.ChainDataset([_stream(data, [1]), data.TensorDataset(ember.zeros(2) if data is eud
                                                                       else torch.zeros(2))])
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            list(bad)
        with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
            len(bad)
    _check_loaders(eud.DataLoader(_stream(eud, [1, 2]) + _stream(eud, [3]), batch_size=2),
                   tud.DataLoader(_stream(tud, [1, 2]) + _stream(tud, [3]), batch_size=2))


def test_stack_dataset_equals_torch():
    x = torch.arange(12.0).view(6, 2)
    y = torch.arange(6)
    ex, ey = to_ember(x), to_ember(y)
    names = [f"n{i}" for i in range(6)]
    ts = tud.StackDataset(tud.TensorDataset(x), y, names)
    es = eud.StackDataset(eud.TensorDataset(ex), ey, names)
    assert len(es) == len(ts) == 6
    _check_batch(es[2], ts[2])
    _check_loaders(eud.DataLoader(es, batch_size=4), tud.DataLoader(ts, batch_size=4))
    td, ed = tud.StackDataset(img=x, label=y), eud.StackDataset(img=ex, label=ey)
    _check_batch(ed[5], td[5])
    _check_batch(ed.__getitems__([1, 3]), td.__getitems__([1, 3]))
    _check_loaders(eud.DataLoader(ed, batch_size=4, shuffle=False), tud.DataLoader(td, batch_size=4))
    for lib, data in ((torch, tud), (ember, eud)):
        with pytest.raises(ValueError, match="but both types are given"):
            data.StackDataset(lib.zeros(2), b=lib.zeros(2))
        with pytest.raises(ValueError, match="At least one dataset should be passed"):
            data.StackDataset()
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            data.StackDataset(lib.zeros(2), lib.zeros(3))
        with pytest.raises(ValueError, match="Size mismatch between datasets"):
            data.StackDataset(a=lib.zeros(2), b=lib.zeros(3))


def test_dataset_errors_equal_torch():
    for lib, data in ((torch, tud), (ember, eud)):
        with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
            data.ConcatDataset([])
        with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
            data.ConcatDataset([_stream(data, [1])])

        class Bad(data.Subset):
            def __getitem__(self, i):
                return 0
        with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
            Bad([1, 2], [0])
        with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
            data.random_split(range(10), [0.5, -0.5, 1.0])
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            data.random_split(range(2), [0.9, 0.1])
        ds = data.TensorDataset(lib.arange(4))
        assert isinstance(ds + ds, data.ConcatDataset) and len(ds + ds) == 8


def test_concat_dataset_negative_indices_and_loader():
    tds = [tud.TensorDataset(torch.arange(a, b)) for a, b in ((0, 3), (10, 14), (20, 21))]
    eds = [eud.TensorDataset(to_ember(d.tensors[0])) for d in tds]
    tc, ec = tud.ConcatDataset(tds), eud.ConcatDataset(eds)
    assert ec.cumulative_sizes == tc.cumulative_sizes == [3, 7, 8]
    for i in range(-8, 8):
        _check_batch(ec[i], tc[i])
    _check_loaders(eud.DataLoader(ec, batch_size=3, num_workers=2), tud.DataLoader(tc, batch_size=3))
