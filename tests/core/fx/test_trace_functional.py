"""Calls of nn.functional traced by torch.fx and ember.fx: the same node (target, the
arguments in the form torch's function hands to __torch_function__, the node's name) for
each, and the traced function computing what the eager one does."""

import numpy as np
import pytest
import torch
import torch.fx
from _compare import assert_same_graph

import ember
import ember.fx

CASES = [  # (name, f(F, lib, x, y)): x is [2, 4, 4, 4]; y as _second_input says
    ("relu", lambda F, L, x, y: F.relu(x)),
    ("relu_inplace", lambda F, L, x, y: F.relu(x * 1, inplace=True)),
    ("relu6", lambda F, L, x, y: F.relu6(x)),
    ("elu", lambda F, L, x, y: F.elu(x, 0.5)),
    ("leaky_relu", lambda F, L, x, y: F.leaky_relu(x, negative_slope=0.2)),
    ("hardtanh", lambda F, L, x, y: F.hardtanh(x, -0.5, 0.5)),
    ("gelu", lambda F, L, x, y: F.gelu(x, approximate="tanh")),
    ("silu", lambda F, L, x, y: F.silu(x)),
    ("softplus", lambda F, L, x, y: F.softplus(x, beta=2)),
    ("softmax", lambda F, L, x, y: F.softmax(x, 1)),
    ("log_softmax", lambda F, L, x, y: F.log_softmax(x, dim=-1)),
    ("softmin", lambda F, L, x, y: F.softmin(x, 1)),
    ("dropout_eval", lambda F, L, x, y: F.dropout(x, 0.3, False)),
    ("layer_norm", lambda F, L, x, y: F.layer_norm(x, x.shape[1:])),
    ("group_norm", lambda F, L, x, y: F.group_norm(x, 2)),
    ("batch_norm", lambda F, L, x, y: F.batch_norm(x, None, None, training=True)),
    ("instance_norm", lambda F, L, x, y: F.instance_norm(x)),
    ("normalize", lambda F, L, x, y: F.normalize(x, dim=1)),
    ("pad", lambda F, L, x, y: F.pad(x, (1, 2), value=0.5)),
    ("interpolate", lambda F, L, x, y: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)),
    ("upsample", lambda F, L, x, y: F.upsample(x, scale_factor=2)),
    ("max_pool2d", lambda F, L, x, y: F.max_pool2d(x, 2, stride=1)),
    ("max_pool2d_indices", lambda F, L, x, y: F.max_pool2d(x, 2, return_indices=True)[1]),
    ("avg_pool2d", lambda F, L, x, y: F.avg_pool2d(x, 2)),
    ("adaptive_avg_pool2d", lambda F, L, x, y: F.adaptive_avg_pool2d(x, (2, 1))),
    ("adaptive_max_pool2d", lambda F, L, x, y: F.adaptive_max_pool2d(x, 2)),
    ("adaptive_max_pool2d_indices", lambda F, L, x, y: F.adaptive_max_pool2d(x, 2, return_indices=True)[1]),
    ("conv2d", lambda F, L, x, y: F.conv2d(x, y, padding=1)),
    ("linear", lambda F, L, x, y: F.linear(x, y)),
    ("mse_loss", lambda F, L, x, y: F.mse_loss(x, y)),
    ("l1_loss", lambda F, L, x, y: F.l1_loss(x, y, reduction="sum")),
    ("smooth_l1_loss", lambda F, L, x, y: F.smooth_l1_loss(x, y)),
    ("huber_loss", lambda F, L, x, y: F.huber_loss(x, y, delta=0.5)),
    ("kl_div", lambda F, L, x, y: F.kl_div(x, y, reduction="batchmean")),
    ("bce_logits", lambda F, L, x, y: F.binary_cross_entropy_with_logits(x, y)),
    ("cosine_similarity", lambda F, L, x, y: F.cosine_similarity(x, y)),
    ("pairwise_distance", lambda F, L, x, y: F.pairwise_distance(x, y)),
    ("glu", lambda F, L, x, y: F.glu(x, 1)),
    ("logsigmoid", lambda F, L, x, y: F.logsigmoid(x)),
    ("tanhshrink", lambda F, L, x, y: F.tanhshrink(x)),
    ("softsign", lambda F, L, x, y: F.softsign(x)),
    ("hardsigmoid", lambda F, L, x, y: F.hardsigmoid(x)),
    ("hardswish", lambda F, L, x, y: F.hardswish(x)),
    ("mish", lambda F, L, x, y: F.mish(x)),
    ("celu", lambda F, L, x, y: F.celu(x)),
    ("selu", lambda F, L, x, y: F.selu(x)),
    ("tanh", lambda F, L, x, y: F.tanh(x)),
    ("sigmoid", lambda F, L, x, y: F.sigmoid(x)),
    ("pixel_shuffle", lambda F, L, x, y: F.pixel_shuffle(x, 2)),
    ("unfold", lambda F, L, x, y: F.unfold(x, 2)),
    ("softshrink", lambda F, L, x, y: F.softshrink(x, 0.3)),
    ("rrelu_eval", lambda F, L, x, y: F.rrelu(x)),
    ("local_response_norm", lambda F, L, x, y: F.local_response_norm(x, 2)),
    ("sdpa", lambda F, L, x, y: F.scaled_dot_product_attention(x, x, x)),
]


def _second_input(name):
    rng = np.random.default_rng(1)
    if name == "conv2d":
        return rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    if name == "linear":
        return rng.standard_normal((3, 4)).astype(np.float32)
    return np.abs(rng.standard_normal((2, 4, 4, 4))).astype(np.float32)


def _traceable(F, lib, call):
    def f(x, y):
        return call(F, lib, x, y)
    return f


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample` is deprecated")
@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_functional_call_is_recorded_as_torch_records_it(name, call):
    tg = torch.fx.symbolic_trace(_traceable(torch.nn.functional, torch, call))
    eg = ember.fx.symbolic_trace(_traceable(ember.nn.functional, ember, call))
    assert_same_graph(tg.graph, eg.graph)
    x = np.random.default_rng(0).standard_normal((2, 4, 4, 4)).astype(np.float32)
    y = _second_input(name)
    eager = _traceable(ember.nn.functional, ember, call)(ember.tensor(x), ember.tensor(y))
    np.testing.assert_array_equal(eg(ember.tensor(x), ember.tensor(y)).numpy(), eager.numpy())
