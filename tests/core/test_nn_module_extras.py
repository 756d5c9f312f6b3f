"""ParameterList/ParameterDict and the less common Module methods, checked against torch.nn."""

from collections import OrderedDict

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember, to_torch

import ember


def _pair(shape=(3, 4), seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(a), torch.tensor(a)


def _swap_prefix(text):
    return text.replace("torch.", "ember.")


# ---- ParameterList ---------------------------------------------------------------------------
def _plists():
    (e1, t1), (e2, t2) = _pair((3, 4), 1), _pair((2,), 2)
    e = ember.nn.ParameterList([ember.nn.Parameter(e1), e2.double(), "extra"])
    t = torch.nn.ParameterList([torch.nn.Parameter(t1), t2.double(), "extra"])
    return e, t


def test_parameter_list_basics():
    e, t = _plists()
    assert len(e) == len(t) == 3
    assert repr(e) == _swap_prefix(repr(t))
    assert list(e.state_dict()) == list(t.state_dict())
    assert isinstance(e[1], ember.nn.Parameter) and e[1].requires_grad
    assert e[-1] == t[-1] == "extra"
    for a, b in zip(list(e)[:2], list(t)[:2]):
        assert_same(a, b)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]


@pytest.mark.parametrize("sl", [slice(None), slice(1, None), slice(None, None, -1), slice(0, 2)])
def test_parameter_list_slicing(sl):
    e, t = _plists()
    es, ts = e[sl], t[sl]
    assert type(es) is ember.nn.ParameterList
    assert repr(es) == _swap_prefix(repr(ts))
    assert list(es.state_dict()) == list(ts.state_dict())


def test_parameter_list_mutation():
    e, t = _plists()
    for m, lib in ((e, ember), (t, torch)):
        m.append(lib.ones(5))
        m.extend([lib.zeros(1), lib.zeros(2, 2)])
        m += [lib.ones(1)]
        m[0] = lib.zeros(7)
        m[-2] = lib.nn.Parameter(lib.ones(3), requires_grad=False)
    assert repr(e) == _swap_prefix(repr(t))
    assert [(k, tuple(v.shape)) for k, v in e.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert [p.requires_grad for p in e.parameters()] == [p.requires_grad for p in t.parameters()]


@pytest.mark.parametrize("call", [lambda m, lib: m[5], lambda m, lib: m[-4], lambda m, lib: m.extend(lib.ones(2)),
                                  lambda m, lib: m.extend(3), lambda m, lib: m(1), lambda m, lib: m.insert(0, 1)])
def test_parameter_list_errors(call):
    e, t = _plists()
    with pytest.raises(Exception) as te:
        call(t, torch)
    with pytest.raises(te.type):
        call(e, ember)


# ---- ParameterDict ---------------------------------------------------------------------------
def _pdicts(kind):
    (e1, t1), (e2, t2) = _pair((3, 4), 1), _pair((2,), 2)
    if kind == "dict":
        return (ember.nn.ParameterDict({"z": e1, "a": ember.nn.Parameter(e2), "m": 3}),
                torch.nn.ParameterDict({"z": t1, "a": torch.nn.Parameter(t2), "m": 3}))
    if kind == "ordered":
        return (ember.nn.ParameterDict(OrderedDict([("z", e1), ("a", e2.double())])),
                torch.nn.ParameterDict(OrderedDict([("z", t1), ("a", t2.double())])))
    return (ember.nn.ParameterDict([("z", e1), ("a", e2.long().float())]),
            torch.nn.ParameterDict([("z", t1), ("a", t2.long().float())]))


@pytest.mark.parametrize("kind", ["dict", "ordered", "pairs"])
def test_parameter_dict_basics(kind):
    e, t = _pdicts(kind)
    assert repr(e) == _swap_prefix(repr(t))
    assert list(e.keys()) == list(t.keys()) and list(e) == list(t) and list(reversed(e)) == list(reversed(t))
    assert list(e.state_dict()) == list(t.state_dict())
    for (ka, va), (kb, vb) in zip(e.items(), t.items()):
        assert ka == kb
        if isinstance(vb, torch.Tensor):
            assert isinstance(va, ember.nn.Parameter)
            assert_same(va, vb)
        else:
            assert va == vb
    assert ("z" in e) and ("q" not in e) and e.get("q", 5) == 5


def test_parameter_dict_methods():
    e, t = _pdicts("dict")
    for m, lib in ((e, ember), (t, torch)):
        m["new"] = lib.ones(2)
        m.setdefault("s", lib.zeros(1))
        m.setdefault("z", lib.zeros(9))
        m.pop("a")
        m.update({"y": lib.ones(1), "b": lib.ones(2)})
        del m["m"]
    assert repr(e) == _swap_prefix(repr(t))
    ek, ev = e.popitem()
    tk, tv = t.popitem()
    assert ek == tk
    assert_same(ev, tv)
    ec, tc = e.copy(), t.copy()
    assert repr(ec) == _swap_prefix(repr(tc)) and ec["z"] is e["z"]
    eo, to = e | ember.nn.ParameterDict({"q": ember.ones(1)}), t | torch.nn.ParameterDict({"q": torch.ones(1)})
    assert list(eo.keys()) == list(to.keys())
    assert list(e.fromkeys(["u", "v"]).keys()) == list(t.fromkeys(["u", "v"]).keys())
    e.clear()
    t.clear()
    assert len(e) == len(t) == 0 and list(e.state_dict()) == []


@pytest.mark.parametrize("call", [lambda m: m[1], lambda m: m["missing"], lambda m: m.update(3),
                                  lambda m: m.update([("a", 1, 2)]), lambda m: m.update([1]),
                                  lambda m: m(1), lambda m: m.__delitem__("q")])
def test_parameter_dict_errors(call):
    e, t = _pdicts("dict")
    with pytest.raises(Exception) as te:
        call(t)
    with pytest.raises(te.type):
        call(e)
    if te.type is not KeyError:
        # ember's message names the same thing as torch's
        with pytest.raises(te.type) as ee:
            call(e)
        assert str(ee.value).replace("ember", "torch") == str(te.value)


# ---- Module extras ---------------------------------------------------------------------------
def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 2)
            self.bn = lib.nn.BatchNorm1d(2)
            self.register_buffer("scratch", lib.zeros(2), persistent=False)
            self.register_buffer("steps", lib.zeros(1))
            self.shared = self.fc

        def forward(self, x):
            return self.bn(self.fc(x))
    return Net()


def _pair_net():
    e, t = _net(ember), _net(torch)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return e, t


def test_buffers_and_names():
    e, t = _pair_net()
    assert list(e.state_dict()) == list(t.state_dict())
    assert "scratch" not in e.state_dict()
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    for kw in ({}, {"remove_duplicate": False}, {"prefix": "m"}):
        assert [n for n, _ in e.named_parameters(**kw)] == [n for n, _ in t.named_parameters(**kw)]
        assert [n for n, _ in e.named_modules(**kw)] == [n for n, _ in t.named_modules(**kw)]
    assert [n for n, _ in e.named_modules(memo={e.bn})] == [n for n, _ in t.named_modules(memo={t.bn})]
    assert [n for n in dir(e) if not n.startswith("_")] == [n for n in dir(t) if not n.startswith("_")
                                                           and hasattr(e, n)]
    assert e.share_memory() is e


@pytest.mark.parametrize("call", [
    lambda m, lib: m.register_buffer("fc", lib.zeros(1)), lambda m, lib: m.register_buffer("a.b", lib.zeros(1)),
    lambda m, lib: m.register_buffer("", lib.zeros(1)), lambda m, lib: m.register_buffer("x", 3),
    lambda m, lib: m.register_buffer(1, lib.zeros(1)),
    lambda m, lib: m.register_parameter("x", lib.zeros(1)), lambda m, lib: m.register_parameter("fc", None),
    lambda m, lib: m.register_parameter("y", lib.nn.Parameter(lib.zeros(1)) * 2),
    lambda m, lib: m.add_module("x", 3), lambda m, lib: m.add_module("steps", lib.nn.ReLU()),
    lambda m, lib: m.add_module("a.b", lib.nn.ReLU()), lambda m, lib: m.register_module("", lib.nn.ReLU()),
    lambda m, lib: m.get_submodule("fc.nothing"), lambda m, lib: m.get_submodule("fc.weight"),
    lambda m, lib: m.get_parameter("bn.running_mean"), lambda m, lib: m.get_parameter("fc.nothing"),
    lambda m, lib: m.get_buffer("fc.weight"), lambda m, lib: m.get_buffer("bn.nothing"),
    lambda m, lib: m.to(lib.int64),
])
def test_registration_and_lookup_errors(call):
    e, t = _pair_net()
    with pytest.raises(Exception) as te:
        call(t, torch)
    with pytest.raises(te.type) as ee:
        call(e, ember)
    assert str(ee.value).replace("ember", "torch") == str(te.value)


def test_lookups():
    e, t = _pair_net()
    assert e.get_submodule("") is e and e.get_submodule("bn") is e.bn
    assert_same(e.get_parameter("fc.weight"), t.get_parameter("fc.weight"))
    assert_same(e.get_buffer("bn.running_var"), t.get_buffer("bn.running_var"))
    assert e.get_buffer("scratch") is e.scratch


def test_load_state_dict_strict_and_assign():
    e, t = _pair_net()
    sd = {k: to_ember(v) for k, v in t.state_dict().items()}
    bad = dict(sd, extra=ember.zeros(1))
    del bad["fc.bias"]
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(bad)
    with pytest.raises(RuntimeError) as te:
        t.load_state_dict({k: to_torch(v) for k, v in bad.items()})
    assert str(ee.value) == str(te.value)
    er = e.load_state_dict(bad, strict=False)
    tr = t.load_state_dict({k: to_torch(v) for k, v in bad.items()}, strict=False)
    assert er.missing_keys == tr.missing_keys and er.unexpected_keys == tr.unexpected_keys
    new_w = ember.ones(2, 3)
    e.fc.weight.requires_grad_(False)
    e.load_state_dict(dict(sd, **{"fc.weight": new_w, "shared.weight": new_w}), assign=True)
    assert isinstance(e.fc.weight, ember.nn.Parameter) and not e.fc.weight.requires_grad
    assert e.fc.weight.data_ptr() == new_w.data_ptr() and e.shared is e.fc
    p = ember.nn.Parameter(ember.zeros(2))
    e.load_state_dict(dict(sd, **{"fc.bias": p, "shared.bias": p}), assign=True)
    assert e.fc.bias is p
    scalar = {k: v for k, v in sd.items()}
    scalar["bn.num_batches_tracked"] = ember.tensor([7])  # [1] loads into a 0-d buffer, as torch
    e.load_state_dict(scalar)
    assert int(e.bn.num_batches_tracked) == 7 and e.bn.num_batches_tracked.dim() == 0


def test_state_dict_hooks_and_extra_state():
    calls = {}

    def make(lib):
        class WithExtra(lib.nn.Linear):
            def get_extra_state(self):
                return {"note": self.note}

            def set_extra_state(self, state):
                self.note = state["note"]
        m = WithExtra(2, 2)
        m.note = "hi"
        return m

    results = []
    for lib in (ember, torch):
        m = make(lib)
        log = calls.setdefault(lib.__name__, [])
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars, log=log: log.append(("pre", prefix)))
        m._register_state_dict_hook(lambda mod, sd, prefix, meta, lib=lib: {**sd, "added": lib.ones(1)})
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta, log=log: log.append(("post", list(sd))))
        sd = m.state_dict()
        results.append(list(sd))
        m2 = make(lib)
        m2.note = "other"
        m2._register_load_state_dict_pre_hook(
            lambda sd, prefix, *rest, log=log: (log.append(("lpre", prefix)), sd.pop("added")))
        m2.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest, log=log: log.append(("lpre2", prefix)))
        h = m2.register_load_state_dict_post_hook(
            lambda mod, keys, log=log: log.append(("lpost", list(keys.missing_keys))))
        m2.load_state_dict(sd)
        h.remove()
        m2.load_state_dict(sd)  # the removed post hook stays quiet
        assert m2.note == "hi"
        with pytest.raises(RuntimeError, match="Missing key"):
            make(lib).load_state_dict({"weight": sd["weight"], "bias": sd["bias"]})
    assert results[0] == results[1] and "_extra_state" in results[0]
    assert calls["ember"] == calls["torch"]


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_requires_grad_apply(set_to_none):
    e, t = _pair_net()
    for m, lib in ((e, ember), (t, torch)):
        m(lib.ones(4, 3)).sum().backward()
        m.zero_grad(set_to_none=set_to_none)
    for (_, a), (_, b) in zip(e.named_parameters(), t.named_parameters()):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            assert_same(a.grad, b.grad)
    e.requires_grad_(False)
    t.requires_grad_(False)
    assert [p.requires_grad for p in e.parameters()] == [p.requires_grad for p in t.parameters()]
    order = {}
    for m, lib in ((e, ember), (t, torch)):
        seen = order.setdefault(lib.__name__, [])
        m.apply(lambda mod, seen=seen: seen.append(type(mod).__name__))
    assert order["ember"] == order["torch"]


@pytest.mark.parametrize("conv", ["half", "bfloat16", "double", "float", "float16", "float64"])
def test_dtype_conversions(conv):
    e, t = _pair_net()
    for m, lib in ((e, ember), (t, torch)):
        out = getattr(m, conv)() if conv in ("half", "bfloat16", "double", "float") else m.to(getattr(lib, conv))
        assert out is m
    for (ka, a), (kb, b) in zip(e.state_dict(keep_vars=True).items(), t.state_dict(keep_vars=True).items()):
        assert ka == kb and str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert isinstance(a, ember.nn.Parameter) == isinstance(b, torch.nn.Parameter)


def test_extra_repr():
    def make(lib):
        class Custom(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.ReLU()

            def extra_repr(self):
                return "alpha=1,\nbeta=2"
        return Custom()
    assert repr(make(ember)) == repr(make(torch))


def test_extra_state_without_an_override_raises_as_torch():
    """Same exception type; ember's message says what to override (torch's asks to file a bug)."""
    e, t = _pair_net()
    with pytest.raises(RuntimeError):
        t.get_extra_state()
    with pytest.raises(RuntimeError, match="overrides get_extra_state\\(\\) and set_extra_state\\(\\)"):
        e.get_extra_state()
