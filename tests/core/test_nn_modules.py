"""ember.nn modules against torch.nn: registration, state_dict interchange, repr, hooks,
modes, conversion, default initialisation, and whole-model forward/backward parity."""

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn as tnn
from conftest import assert_same, to_ember

import ember
import ember.nn as nn
from ember.nn import init


def _small_cnn(lib):
    class CNN(lib.Module):
        def __init__(self):
            super().__init__()
            self.features = lib.Sequential(
                lib.Conv2d(1, 4, 3, padding=1), lib.BatchNorm2d(4), lib.ReLU(), lib.MaxPool2d(2),
                lib.Conv2d(4, 6, 3), lib.BatchNorm2d(6), lib.ReLU(), lib.AdaptiveAvgPool2d(2))
            self.classifier = lib.Sequential(lib.Flatten(), lib.Linear(24, 16), lib.GELU(), lib.LayerNorm(16),
                                             lib.Dropout(0.0), lib.Linear(16, 5))

        def forward(self, x):
            return self.classifier(self.features(x))
    return CNN()


def _copy_from_torch(emod, tmod):
    sd = OrderedDict((k, ember.tensor(v.detach().numpy().copy())) for k, v in tmod.state_dict().items())
    return emod.load_state_dict(sd)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    ember.manual_seed(0)


def test_state_dict_keys_match_torch():
    e, t = _small_cnn(nn), _small_cnn(tnn)
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    for (k, ev), tv in zip(e.state_dict().items(), t.state_dict().values()):
        assert tuple(ev.shape) == tuple(tv.shape), k
        assert str(ev.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], k
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert list(e.state_dict()._metadata.items()) == list(t.state_dict()._metadata.items())


def test_checkpoints_move_both_ways():
    e, t = _small_cnn(nn), _small_cnn(tnn)
    res = _copy_from_torch(e, t)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    t2 = _small_cnn(tnn)
    t2.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    for (k, a), b in zip(t.state_dict().items(), t2.state_dict().values()):
        assert torch.equal(a, b), k


@pytest.mark.parametrize("training", [True, False])
def test_cnn_forward_backward_matches_torch(training):
    e, t = _small_cnn(nn), _small_cnn(tnn)
    _copy_from_torch(e, t)
    e.train(training)
    t.train(training)
    x = torch.randn(3, 1, 10, 10)
    y = torch.tensor([0, 4, 2])
    tl = tnn.CrossEntropyLoss(label_smoothing=0.1)(t(x), y)
    el = nn.CrossEntropyLoss(label_smoothing=0.1)(e(to_ember(x)), to_ember(y))
    assert_same(el, tl, 1e-4, 1e-5)
    tl.backward()
    el.backward()
    tgrads = dict(t.named_parameters())
    for name, p in e.named_parameters():
        assert_same(p.grad, tgrads[name].grad, 1e-3, 1e-5)
    for (_, a), b in zip(e.state_dict().items(), t.state_dict().values()):
        assert_same(a, b, 1e-5, 1e-6)


def test_load_state_dict_reports_missing_and_unexpected():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    sd = m.state_dict()
    del sd["0.bias"]
    sd["2.weight"] = ember.zeros(1)
    sd["1.extra"] = ember.zeros(1)
    with pytest.raises(RuntimeError) as info:
        m.load_state_dict(sd)
    msg = str(info.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "0.bias".' in msg
    assert 'Unexpected key(s) in state_dict: "2.weight", "1.extra".' in msg
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["0.bias"]
    assert result.unexpected_keys == ["2.weight", "1.extra"]
    assert type(result).__name__ == "_IncompatibleKeys"
    # the same report as torch's
    tm = tnn.Sequential(tnn.Linear(2, 3), tnn.BatchNorm1d(3))
    tsd = {k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()}
    tres = tm.load_state_dict(tsd, strict=False)
    assert (result.missing_keys, result.unexpected_keys) == (tres.missing_keys, tres.unexpected_keys)


def test_load_state_dict_shape_mismatch_names_key_and_shapes():
    m = nn.Linear(4, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch for weight: copying a param with shape "
                                           r"torch.Size\(\[3, 4\]\) from checkpoint, the shape in current model "
                                           r"is torch.Size\(\[2, 4\]\)"):
        m.load_state_dict({"weight": ember.zeros(3, 4), "bias": ember.zeros(2)})


def test_load_state_dict_copies_values_in_place():
    m = nn.Linear(2, 2)
    w = m.weight
    m.load_state_dict({"weight": ember.ones(2, 2), "bias": ember.zeros(2)})
    assert m.weight is w
    assert (w == 1).all().item()
    assert w.requires_grad


def test_setattr_routing_and_registration():
    m = nn.Module()
    m.p = nn.Parameter(ember.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", ember.ones(1))
    m.register_buffer("tmp", ember.ones(1), persistent=False)
    m.plain = 3
    assert [n for n, _ in m.named_parameters()] == ["p", "sub.weight", "sub.bias"]
    assert [n for n, _ in m.named_buffers()] == ["buf", "tmp"]
    assert list(m.state_dict()) == ["p", "buf", "sub.weight", "sub.bias"]
    assert [n for n, _ in m.named_children()] == ["sub"]
    assert "plain" not in m._parameters and m.plain == 3
    m.buf = ember.zeros(1)
    assert "buf" in m._buffers
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter 'p'"):
        m.p = 3
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'sub'"):
        m.sub = 3
    with pytest.raises(KeyError):
        m.register_buffer("a.b", ember.ones(1))
    m.p = None
    assert m.p is None and [n for n, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        _ = m.nothing
    del m.sub
    assert list(m.children()) == []
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.w = nn.Parameter(ember.zeros(1))
        Bad()


def test_shared_parameters_counted_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    assert len(list(m.parameters())) == 2
    assert len(list(m.modules())) == 2
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_parameter():
    p = nn.Parameter(ember.randn(2, 3))
    assert isinstance(p, ember.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert not nn.Parameter(ember.randn(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    import copy
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q._data is not p._data
    (p * 2).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2)


def test_repr_matches_torch():
    assert repr(_small_cnn(nn)).replace("CNN", "X") == repr(_small_cnn(tnn)).replace("CNN", "X")
    pairs = [
        (nn.Conv2d(2, 4, (3, 5), stride=2, padding=1, dilation=2, groups=2, bias=False),
         tnn.Conv2d(2, 4, (3, 5), stride=2, padding=1, dilation=2, groups=2, bias=False)),
        (nn.Conv2d(1, 2, 3, padding="same"), tnn.Conv2d(1, 2, 3, padding="same")),
        (nn.Conv1d(2, 3, 3), tnn.Conv1d(2, 3, 3)),
        (nn.BatchNorm1d(3, momentum=None, affine=False), tnn.BatchNorm1d(3, momentum=None, affine=False)),
        (nn.LayerNorm(3, elementwise_affine=False), tnn.LayerNorm(3, elementwise_affine=False)),
        (nn.MaxPool2d((2, 3)), tnn.MaxPool2d((2, 3))), (nn.AvgPool2d(2, 1), tnn.AvgPool2d(2, 1)),
        (nn.AvgPool1d(2), tnn.AvgPool1d(2)), (nn.Softmax(dim=1), tnn.Softmax(dim=1)),
        (nn.LogSoftmax(), tnn.LogSoftmax()), (nn.ReLU(inplace=True), tnn.ReLU(inplace=True)),
        (nn.GELU("tanh"), tnn.GELU("tanh")), (nn.Tanh(), tnn.Tanh()), (nn.Sigmoid(), tnn.Sigmoid()),
        (nn.Identity(), tnn.Identity()), (nn.CrossEntropyLoss(), tnn.CrossEntropyLoss()),
        (nn.LeakyReLU(0.2), tnn.LeakyReLU(0.2)), (nn.Dropout2d(0.1), tnn.Dropout2d(0.1)),
        (nn.ModuleList([nn.Linear(2, 3) for _ in range(3)] + [nn.ReLU()]),
         tnn.ModuleList([tnn.Linear(2, 3) for _ in range(3)] + [tnn.ReLU()])),
        (nn.ModuleDict({"a": nn.ReLU(), "b": nn.Sequential()}),
         tnn.ModuleDict({"a": tnn.ReLU(), "b": tnn.Sequential()})),
    ]
    for e, t in pairs:
        assert repr(e) == repr(t)


def test_train_eval_apply_requires_grad_zero_grad():
    m = _small_cnn(nn)
    assert m.training and all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "CNN" and seen[0] == "Conv2d"
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    m(ember.randn(2, 1, 10, 10)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all((p.grad == 0).all().item() for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_to_double_float_keeps_parameter_identity():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    w = m[0].weight
    m.double()
    assert m[0].weight is w and w.dtype is ember.float64
    assert m[1].running_mean.dtype is ember.float64
    assert m[1].num_batches_tracked.dtype is ember.int64
    assert m(ember.randn(4, 2, dtype=ember.float64)).dtype is ember.float64
    m.to(ember.float32)
    assert w.dtype is ember.float32
    m.to("cpu")
    with pytest.raises(TypeError):
        m.to(ember.int64)


def test_forward_hooks_and_pre_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    out = m(ember.randn(3, 2))
    np.testing.assert_allclose(out.detach().numpy(), (m.bias.detach() + 1).expand(3, 2).numpy(), rtol=1e-6)
    assert calls == [ember.Size([3, 2])]
    h1.remove()
    h2.remove()
    x = ember.randn(3, 2)
    np.testing.assert_allclose(m(x).detach().numpy(), (x @ m.weight.T + m.bias).detach().numpy(), rtol=1e-6)
    assert calls == [ember.Size([3, 2])]


def test_get_submodule_and_containers():
    m = _small_cnn(nn)
    assert m.get_submodule("features.0") is m.features[0]
    assert m.get_parameter("classifier.1.weight") is m.classifier[1].weight
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        m.get_submodule("features.nope")
    seq = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    assert isinstance(seq[-1], nn.Sigmoid)
    del seq[0]
    assert list(seq._modules) == ["0", "1"]
    seq.append(nn.ReLU())
    assert len(seq) == 3
    with pytest.raises(IndexError):
        seq[5]
    ml = nn.ModuleList([nn.ReLU()])
    ml.append(nn.Tanh())
    ml += [nn.Sigmoid()]
    ml.insert(0, nn.Identity())
    assert [type(x).__name__ for x in ml] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.Linear(1, 2)
    assert list(md.keys()) == ["a", "b"] and "a" in md
    assert list(md.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]
    od = nn.Sequential(OrderedDict([("conv", nn.Conv2d(1, 1, 1)), ("act", nn.ReLU())]))
    assert list(od.state_dict()) == ["conv.weight", "conv.bias"]


def test_batchnorm_module_running_stats_momentum_none_and_eval():
    e, t = nn.BatchNorm2d(3, momentum=None), tnn.BatchNorm2d(3, momentum=None)
    for _ in range(3):
        x = torch.randn(4, 3, 2, 2)
        assert_same(e(to_ember(x)), t(x), 1e-4, 1e-5)
    for (_, a), b in zip(e.state_dict().items(), t.state_dict().values()):
        assert_same(a, b, 1e-5, 1e-6)
    e.eval()
    t.eval()
    x = torch.randn(2, 3, 2, 2)
    assert_same(e(to_ember(x)), t(x), 1e-4, 1e-5)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        e(ember.randn(2, 3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(ember.randn(2, 3, 1, 1))
    no_stats = nn.BatchNorm1d(3, track_running_stats=False)
    assert list(no_stats.state_dict()) == ["weight", "bias"]
    no_stats.eval()
    assert no_stats(ember.randn(4, 3)).shape == ember.Size([4, 3])


def test_module_errors_match_torch():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, padding="same", stride=2)
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(-0.1)


def test_dropout_module_train_and_eval():
    d = nn.Dropout(0.5)
    x = ember.ones(100, 100)
    assert abs((d(x) == 0).float().mean().item() - 0.5) < 0.03
    d.eval()
    assert d(x) is x


def test_loss_modules_match_torch():
    x, y = torch.randn(5, 4, requires_grad=True), torch.randint(0, 4, (5,))
    w = torch.rand(4)
    cases = [(nn.CrossEntropyLoss(weight=to_ember(w), ignore_index=1), tnn.CrossEntropyLoss(weight=w, ignore_index=1),
              y), (nn.NLLLoss(reduction="sum"), tnn.NLLLoss(reduction="sum"), y),
             (nn.MSELoss(), tnn.MSELoss(), torch.randn(5, 4)),
             (nn.L1Loss(reduction="none"), tnn.L1Loss(reduction="none"), torch.randn(5, 4)),
             (nn.BCEWithLogitsLoss(pos_weight=to_ember(w)), tnn.BCEWithLogitsLoss(pos_weight=w), torch.rand(5, 4)),
             (nn.BCELoss(), tnn.BCELoss(), torch.rand(5, 4))]
    for e, t, target in cases:
        inp = x.sigmoid() if isinstance(t, tnn.BCELoss) else x
        assert_same(e(to_ember(inp), to_ember(target)), t(inp, target), 1e-5, 1e-6)
        assert list(e.state_dict()) == list(t.state_dict())
    assert nn.MSELoss(size_average=False).reduction == "sum"


def test_default_init_distributions():
    ember.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) gives the same bound as the bias
    w = lin.weight.detach().numpy()
    assert w.dtype == np.float32 and lin.weight.dtype is ember.float32
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    conv = nn.Conv2d(8, 4, 3)
    cb = 1 / math.sqrt(8 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= cb
    assert np.abs(conv.bias.detach().numpy()).max() <= cb
    bn = nn.BatchNorm2d(3)
    assert (bn.weight == 1).all().item() and (bn.bias == 0).all().item()
    assert not lin.weight.grad_fn and lin.weight.is_leaf


def test_init_functions():
    t = ember.empty(200, 300)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(tnn.init.calculate_gain("leaky_relu", 0.2))
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("foo")
    init.xavier_uniform_(t, gain=2.0)
    a = 2.0 * math.sqrt(6 / 500)
    assert np.abs(t.numpy()).max() <= a and t.numpy().std() == pytest.approx(a / math.sqrt(3), rel=0.03)
    init.xavier_normal_(t)
    assert t.numpy().std() == pytest.approx(math.sqrt(2 / 500), rel=0.03)
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert t.numpy().std() == pytest.approx(math.sqrt(2 / 200), rel=0.03)
    init.kaiming_uniform_(t, nonlinearity="relu")
    assert np.abs(t.numpy()).max() <= math.sqrt(6 / 300)
    init.normal_(t, 1.0, 0.5)
    assert t.numpy().mean() == pytest.approx(1.0, abs=0.01) and t.numpy().std() == pytest.approx(0.5, rel=0.03)
    init.uniform_(t, -1, 3)
    assert t.numpy().min() >= -1 and t.numpy().max() < 3
    init.constant_(t, 0.25)
    assert (t == 0.25).all().item()
    init.zeros_(t)
    assert (t == 0).all().item()
    init.ones_(t)
    assert (t == 1).all().item()
    p = nn.Parameter(ember.empty(3, 3))
    init.eye_(p)
    np.testing.assert_array_equal(p.detach().numpy(), np.eye(3))
    assert p.grad_fn is None and p.requires_grad
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(3))


def test_unbatched_and_linear_nd_modules():
    conv = nn.Conv2d(2, 3, 3)
    assert conv(ember.randn(2, 5, 5)).shape == ember.Size([3, 3, 3])
    lin = nn.Linear(4, 2, bias=False)
    assert lin.bias is None and lin(ember.randn(2, 3, 4)).shape == ember.Size([2, 3, 2])
    assert list(lin.state_dict()) == ["weight"]


ACTIVATIONS = [("ReLU6", ()), ("SELU", ()), ("CELU", (0.7,)), ("Softsign", ()), ("Hardtanh", (-0.5, 2.0)),
               ("Hardsigmoid", ()), ("Hardswish", ()), ("Mish", ()), ("LogSigmoid", ()), ("Tanhshrink", ()),
               ("Softshrink", (0.3,)), ("Hardshrink", ()), ("Threshold", (0.1, 20.0)), ("GLU", (-1,)),
               ("Softmin", (1,)), ("Softmax2d", ()), ("PReLU", (3, 0.1)), ("RReLU", ())]


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_modules_match_torch(name, args):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32) * 3
    out = []
    for lib in (ember, torch):
        layer = getattr(lib.nn, name)(*args).eval()
        t = lib.tensor(x, requires_grad=True)
        y = layer(t)
        (y * y).sum().backward()
        out.append((y.detach(), t.grad, [p.grad for p in layer.parameters()], repr(layer)))
    assert_same(out[0][:3], out[1][:3], 1e-5, 1e-5)
    assert out[0][3] == out[1][3]


INPLACE_CAPABLE = ["ReLU", "ReLU6", "SELU", "CELU", "Hardtanh", "Hardsigmoid", "Hardswish", "Mish", "SiLU", "ELU",
                   "LeakyReLU", "RReLU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"]


@pytest.mark.parametrize("name", INPLACE_CAPABLE)
def test_inplace_reprs_match_torch(name):
    """torch prints inplace=True for most of these, and nothing for Hardsigmoid/Hardswish."""
    assert repr(getattr(nn, name)(inplace=True)) == repr(getattr(tnn, name)(inplace=True))


def _truncated_normal_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std^2) truncated to [a, b] (closed form)."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    r2 = math.sqrt(2)
    if alpha > 0:  # the mass between two points of one tail, without cancellation
        z = (math.erfc(alpha / r2) - math.erfc(beta / r2)) / 2
    elif beta < 0:
        z = (math.erfc(-beta / r2) - math.erfc(-alpha / r2)) / 2
    else:
        z = (math.erf(beta / r2) - math.erf(alpha / r2)) / 2
    m = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - m * m
    return mean + std * m, std * math.sqrt(var)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.0), (0.0, 0.02, -0.04, 0.04),
                                             (0.0, 1.0, 8.0, 9.0), (3.0, 0.5, -1.0, 0.0)])
def test_trunc_normal_has_the_truncated_distributions_moments_even_far_in_the_tail(mean, std, a, b):
    t = ember.empty(100_000)
    far = mean < a - 2 * std or mean > b + 2 * std
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        init.trunc_normal_(t, mean, std, a, b)  # the far tails once took unbounded time
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        tnn.init.trunc_normal_(torch.empty(10), mean, std, a, b)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs] and bool(ours) == far
    x = t.numpy().astype(np.float64)
    want_mean, want_std = _truncated_normal_moments(mean, std, a, b)
    assert x.min() >= np.float32(a) and x.max() <= np.float32(b)
    assert x.mean() == pytest.approx(want_mean, abs=0.02 * want_std)
    assert x.std() == pytest.approx(want_std, rel=0.02)
