"""Dropout1d, Dropout3d, AlphaDropout, FeatureAlphaDropout and their functional forms.

Random streams differ from torch's, so the tests are statistical (drop rate, scaling,
channel-wise masks, alpha dropout's preserved mean and variance) and compare with torch
what does not depend on the stream: the values kept and dropped elements take, eval-mode
identity, reprs and errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
    torch.manual_seed(0)


CHANNEL_CASES = [  # (ember fn, torch fn, shape, number of leading dims one draw covers)
    (F.dropout1d, TF.dropout1d, (40, 50, 6), 2),
    (F.dropout1d, TF.dropout1d, (400, 5), 1),
    (F.dropout3d, TF.dropout3d, (20, 100, 2, 2, 2), 2),
    (F.dropout3d, TF.dropout3d, (800, 2, 2, 2), 1),
]


@pytest.mark.parametrize("efn,tfn,shape,lead", CHANNEL_CASES)
@pytest.mark.parametrize("p", [0.2, 0.6])
def test_channel_dropout_masks_rate_and_gradient(efn, tfn, shape, lead, p):
    x = ember.ones(*shape, requires_grad=True)
    out = efn(x, p)
    arr = out.detach().numpy().reshape(int(np.prod(shape[:lead])), -1)
    # each channel is dropped or kept whole, kept values scaled by 1/(1-p) as torch's
    expected = {0.0, float(np.float32(1 / (1 - p)))}
    t_vals = set(np.unique(tfn(torch.ones(*shape), p).numpy()).tolist())
    assert t_vals == expected
    assert set(np.unique(arr).tolist()) <= expected
    assert (arr == arr[:, :1]).all()
    rate = (arr[:, 0] == 0).mean()
    n = arr.shape[0]
    assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / n)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


@pytest.mark.parametrize("p,feature", [(0.1, False), (0.5, False), (0.3, True)])
def test_alpha_dropout_values_and_moments(p, feature):
    efn, tfn = (F.feature_alpha_dropout, TF.feature_alpha_dropout) if feature else (F.alpha_dropout, TF.alpha_dropout)
    # the two values an input of ones can take, compared with torch's
    e_vals = np.unique(efn(ember.ones(300, 40, 2), p, True).numpy())
    t_vals = np.unique(tfn(torch.ones(300, 40, 2), p, True).numpy())
    np.testing.assert_allclose(e_vals, t_vals, rtol=1e-6)
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
    np.testing.assert_allclose(e_vals, [alpha * a * (p - 1), a + alpha * a * p], rtol=1e-6)
    # zero mean, unit variance input keeps its moments
    x = ember.randn(400, 100, 5)
    out = efn(x, p, True).numpy()
    assert abs(out.mean()) < 0.03 and abs(out.var() - 1) < 0.05
    if feature:  # one draw per (sample, channel)
        dropped = efn(ember.ones(50, 30, 4), p, True).numpy() < 0
        assert (dropped == dropped[..., :1]).all()
        rate = dropped[..., 0].mean()
        assert abs(rate - p) < 4 * math.sqrt(p * (1 - p) / dropped[..., 0].size)


def test_alpha_dropout_gradient():
    x = ember.randn(50, 40, requires_grad=True)
    out = F.alpha_dropout(x, 0.4, True)
    out.sum().backward()
    kept = x.grad.numpy() != 0
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * 0.4 + 1) * 0.6)
    np.testing.assert_allclose(x.grad.numpy()[kept], a, rtol=1e-6)
    np.testing.assert_allclose(out.detach().numpy()[~kept], alpha * a * (0.4 - 1), rtol=1e-6)


@pytest.mark.parametrize("fn", [F.dropout1d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout])
def test_identity_when_not_training_or_p_zero_and_zeros_at_p_one(fn):
    shape = (2, 3, 4) if fn is F.dropout1d else (2, 3, 2, 2, 2)
    x = ember.randn(*shape)
    assert fn(x, 0.5, False) is x
    assert fn(x, 0.0, True) is x
    assert np.array_equal(fn(x, 1.0, True).numpy(), np.zeros(shape, np.float32))
    tfn = getattr(TF, fn.__name__)
    assert np.array_equal(tfn(torch.randn(*shape), 1.0, True).numpy(), np.zeros(shape, np.float32))


def test_default_training_flags_as_torch():
    x = ember.randn(4, 3, 5)
    assert F.alpha_dropout(x) is x and F.feature_alpha_dropout(x) is x  # training=False by default
    assert not np.array_equal(F.dropout1d(x, 0.5).numpy(), x.numpy())  # training=True by default


@pytest.mark.parametrize("name", ["dropout1d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"])
def test_inplace(name):
    shape = (30, 20, 4) if name == "dropout1d" else (30, 20, 2, 2, 2)
    x = ember.ones(*shape)
    out = getattr(F, name)(x, 0.5, True, True)
    assert out is x
    assert (x.numpy() != 1).any()


@pytest.mark.parametrize("ename", ["Dropout1d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"])
def test_modules(ename):
    e, t = getattr(nn, ename)(0.3, inplace=True), getattr(tnn, ename)(0.3, inplace=True)
    assert repr(e) == repr(t)
    assert repr(getattr(nn, ename)()) == repr(getattr(tnn, ename)())
    shape = (30, 20, 4) if ename == "Dropout1d" else (30, 20, 2, 2, 2)
    m = getattr(nn, ename)(0.5)
    x = ember.ones(*shape)
    assert (m(x).numpy() != 1).any()
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(nn, ename)(1.5)


def test_errors():
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(ember.randn(2, 3, 4, 5))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        TF.dropout1d(torch.randn(2, 3, 4, 5))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(ember.randn(5), 0.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        TF.feature_alpha_dropout(torch.randn(5), 0.5, True)
    for fn in (F.dropout1d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match="between 0 and 1"):
            fn(ember.randn(2, 3, 4), -0.1, True)
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
        out = F.dropout3d(ember.ones(200, 3, 2), 0.5)
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input"):
        TF.dropout3d(torch.ones(200, 3, 2), 0.5)
    arr = out.numpy().reshape(200, -1)  # treated as unbatched: one draw per entry of dim 0
    assert (arr == arr[:, :1]).all()
