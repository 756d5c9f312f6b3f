"""Conformance entries: nn.functional's gumbel_softmax, fractional max pooling and
linear_cross_entropy, and torch's top-level low-level nn forms (native_*_norm,
native_dropout, feature_dropout, convolution, conv_tbc, grid_sampler*, the recurrent cells
and the flat-weight torch.lstm/gru/rnn_tanh/rnn_relu).

Where torch's graph holds one fused node that ember builds from several (conv_tbc,
grid_sampler, affine_grid_generator, norm_except_dim, the flat recurrent forms), the entry
is listed in NODE_NAMES_DIFFER; values and gradients are compared as ever.
"""

import numpy as np
from op_table import Arg, Op, Sample, f, i64, pos, within

small = within(-0.6, 0.6)


def _uniform(*shape):
    """Fractional pooling's samples: fixed, in [0, 1), no gradient."""
    return Arg(within(0.0, 0.999)(*shape), grad=False)


def _noise(*shape):
    """Gumbel-softmax's exponential noise, handed to both libraries' ``exponential_``."""
    return Arg(pos(*shape), grad=False)


def _with_exponential(L, noise, fn):
    """Run ``fn`` with ``Tensor.exponential_`` writing ``noise`` instead of drawing."""
    cls = L.Tensor
    own = "exponential_" in cls.__dict__
    saved = cls.__dict__.get("exponential_")

    def fixed(self, lambd=1.0, *, generator=None):
        with L.no_grad():
            self.copy_(noise)
        return self
    cls.exponential_ = fixed
    try:
        return fn()
    finally:
        if own:
            cls.exponential_ = saved
        else:
            del cls.exponential_


def _gumbel(L, logits, noise, noise0):
    F = L.nn.functional
    return _with_exponential(L, noise, lambda: (F.gumbel_softmax(logits), F.gumbel_softmax(logits, tau=0.5))) + \
        _with_exponential(L, noise0, lambda: (F.gumbel_softmax(logits.t(), tau=2.0, dim=0),))


def _gumbel_hard(L, logits, noise, noise0):
    """One-hot samples whose gradient is the soft sample's (straight-through)."""
    F = L.nn.functional
    return _with_exponential(L, noise, lambda: (F.gumbel_softmax(logits, tau=2.0, hard=True),)) + \
        _with_exponential(L, noise0, lambda: (F.gumbel_softmax(logits.t(), hard=True, dim=0),))


def _frac2d(L, x, s):
    F = L.nn.functional
    return (F.fractional_max_pool2d(x, 2, output_size=(3, 4), _random_samples=s),
            F.fractional_max_pool2d(x, (2, 3), output_ratio=(0.5, 0.5), return_indices=True, _random_samples=s),
            F.fractional_max_pool2d_with_indices(x, 3, output_size=2, _random_samples=s),
            F.fractional_max_pool2d(x, 1, output_size=(5, 6), _random_samples=s))


def _frac3d(L, x, s):
    F = L.nn.functional
    return (F.fractional_max_pool3d(x, 2, output_size=(2, 3, 2), _random_samples=s),
            F.fractional_max_pool3d(x, (1, 2, 2), output_ratio=(0.5, 0.5, 0.5), return_indices=True,
                                    _random_samples=s),
            F.fractional_max_pool3d_with_indices(x, 2, output_size=1, _random_samples=s))


def _frac_args(L, x, s, size, ratio):
    return L.nn.functional.fractional_max_pool2d(x, 2, output_size=size, output_ratio=ratio, _random_samples=s)


def _linear_ce(L, x, w, b, t, w3, t3):
    F = L.nn.functional
    return tuple((F.linear_cross_entropy(x, w, t), F.linear_cross_entropy(x, w, t, linear_bias=b, reduction="sum"),
            F.linear_cross_entropy(x, w, t, label_smoothing=0.2, reduction="none", ignore_index=1),
            F.linear_cross_entropy(x, w3, t3, reduction="none"),
            F.linear_cross_entropy(x[0], w, t[0])))


def _deterministic_dropouts(L, a):
    return (L.feature_dropout(a, 0.5, False), L.feature_dropout(a, 0.0, True), L.feature_dropout(a, 1.0, True),
            L.native_dropout(a, 0.3, False), L.native_dropout(a, 1.0, True), L.native_dropout(a, 0.0, True))


def _native_layer_norm(L, x, w, b):
    return L.native_layer_norm(x, [4], w, b, 1e-5) + L.native_layer_norm(x, (3, 4), None, None, 1e-3)


def _native_batch_norm(L, x, w, b, rm, rv):
    rm_t, rv_t = L.zeros(3), L.ones(3)
    train = L.native_batch_norm(x, w, b, rm_t, rv_t, True, 0.2, 1e-5)
    return train + (rm_t, rv_t) + L.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5) + \
        L.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-3)


def _native_group_norm(L, x, w, b):
    return L.native_group_norm(x, w, b, 2, 4, 6, 2, 1e-5) + L.native_group_norm(x, None, None, 2, 4, 6, 4, 1e-3)


def _outputs(fn, picks):
    """Entry ``fn`` keeping the results at ``picks`` (gradcheck wants differentiable outputs
    only: the saved statistics are compared by the entry without gradients)."""
    return lambda L, *args: tuple(o for k, o in enumerate(fn(L, *args)) if k in picks)


def _convolution(L, x, w, b, wt, x2, w2):
    return (L.convolution(x, w, b, [1], [1], [1], False, [0], 1), L.convolution(x, w, None, [2], [0], [2], False,
                                                                                 [0], 1),
            L.convolution(x, wt, None, [2], [1], [1], True, [1], 1),
            L.convolution(x2, w2, None, [1, 2], [1, 0], [1, 1], False, [0, 0], 2))


def _conv_tbc(L, x, w, b):
    return L.conv_tbc(x, w, b, 1), L.nn.functional.conv_tbc(x, w, b)


def _grid_samplers(L, x, g, x5, g5):
    return (L.grid_sampler(x, g, 0, 0, False), L.grid_sampler_2d(x, g, 2, 1, True),
            L.grid_sampler(x, g, 1, 2, False), L.grid_sampler_3d(x5, g5, 0, 2, True),
            L.grid_sampler(x5, g5, 1, 0, False))


def _norm_except_dim(L, v):
    return (L.norm_except_dim(v, 2, 0), L.norm_except_dim(v, 3, 1), L.norm_except_dim(v),
            L.norm_except_dim(v, 1, 2), L.norm_except_dim(v, 2, -1))


def _cells(L, x, h, c, w4i, w4h, b4i, b4h, w3i, w3h, b3i, b3h, w1i, w1h, b1i, b1h):
    return (L.lstm_cell(x, (h, c), w4i, w4h, b4i, b4h), L.lstm_cell(x, [h, c], w4i, w4h),
            L.gru_cell(x, h, w3i, w3h, b3i, b3h), L.gru_cell(x, h, w3i, w3h),
            L.rnn_tanh_cell(x, h, w1i, w1h, b1i, b1h), L.rnn_relu_cell(x, h, w1i, w1h, b1i, b1h),
            L.rnn_relu_cell(x, h, w1i, w1h))


def _cell_weights(gates, i, h):
    return [small(gates * h, i), small(gates * h, h), small(gates * h), small(gates * h)]


def _cell_sample(b=1, i=2, h=2):
    return Sample((small(b, i), small(b, h), small(b, h), *_cell_weights(4, i, h), *_cell_weights(3, i, h),
                   *_cell_weights(1, i, h)))


def _layer_params(gates, i, h, layers, dirs, biases=True, proj=0):
    """torch's flat weight list: per layer, per direction, w_ih, w_hh[, b_ih, b_hh][, w_hr]."""
    out = []
    h_out = proj or h
    for layer in range(layers):
        for _ in range(dirs):
            width = i if layer == 0 else h_out * dirs
            out += [small(gates * h, width), small(gates * h, h_out)]
            if biases:
                out += [small(gates * h), small(gates * h)]
            if proj:
                out.append(small(proj, h))
    return out


def _lstm(L, x, h0, c0, params, xp, hp, cp, pparams):
    return tuple(L.lstm(x, (h0, c0), params, True, 2, 0.0, False, True, False) +
                      L.lstm(x.transpose(0, 1), [h0, c0], params, True, 2, 0.0, True, True, True) +
                      L.lstm(xp, L.tensor([2, 2, 1]), (hp, cp), pparams, False, 1, 0.0, False, False))


def _lstm_proj(L, x, h0, c0, params):
    return tuple(L.lstm(x, (h0, c0), params, True, len(params) // 5, 0.0, False, False, False))


def _elman(name):
    def fn(L, x, h0, params, xp, hp, pparams):
        run = getattr(L, name)
        return tuple(run(x, h0, params, True, 2, 0.0, False, True, False) +
                          run(x.transpose(0, 1), h0, params, True, 2, 0.0, True, True, True) +
                          run(xp, L.tensor([2, 2, 1]), hp, pparams, False, 1, 0.0, False, False))
    return fn


def _elman_sample(gates):
    return Sample((small(4, 2, 3), small(4, 2, 5), _layer_params(gates, 3, 5, 2, 2), small(5, 3), small(1, 2, 4),
                   _layer_params(gates, 3, 4, 1, 1, biases=False)))


def _embedding_renorm(L, w):
    w = w.clone()
    L.embedding_renorm_(w, L.tensor([0, 2, 2, 4]), 1.0, 2.0)
    v = w.clone()
    L.embedding_renorm_(v, L.tensor([[1, 3]]), 0.5, 1.0)
    return w, v


OPS = [
    Op("F.gumbel_softmax", _gumbel, [Sample((f(3, 5), _noise(3, 5), _noise(5, 3)), name="2d"),
                                     Sample((f(4, 2), _noise(4, 2), _noise(2, 4)), name="two-classes")]),
    # finite differences see the one-hot part as constant: no gradcheck of the straight-through estimate
    Op("F.gumbel_softmax_hard", _gumbel_hard, [Sample((f(3, 5), _noise(3, 5), _noise(5, 3)), name="2d"),
                                               Sample((f(4, 2), _noise(4, 2), _noise(2, 4)), name="two-classes")],
       gradcheck=False),
    Op("F.fractional_max_pool2d", _frac2d, [Sample((f(2, 3, 5, 6), _uniform(2, 3, 2)), name="batched"),
                                            Sample((f(2, 5, 6), _uniform(1, 2, 2)), name="unbatched")]),
    Op("F.fractional_max_pool3d", _frac3d, [Sample((f(2, 2, 4, 5, 4), _uniform(2, 2, 3)), name="batched"),
                                            Sample((f(1, 4, 5, 4), _uniform(1, 1, 3)), name="unbatched")]),
    Op("F.fractional_max_pool_args", _frac_args, [Sample((f(1, 2, 5, 5), _uniform(1, 2, 2), 4, None))],
       errors=[(Sample((f(1, 2, 5, 5), _uniform(1, 2, 2), None, None)), ValueError),
               (Sample((f(1, 2, 5, 5), _uniform(1, 2, 2), 5, None)), RuntimeError),
               (Sample((f(1, 2, 5, 5), _uniform(1, 2, 2), None, (0.5, 0.5, 0.5))), ValueError)]),
    Op("F.linear_cross_entropy", _linear_ce, [Sample((f(4, 3), f(5, 3), f(5), np.array([0, 1, 4, 2]), f(5, 2, 3),
                                                      i64(4, 2)))],
       errors=[(Sample((f(2, 4, 3), f(5, 3), f(5), i64(2, 4), f(5, 2, 3), i64(4, 2))), RuntimeError)]),
    Op("dropout_deterministic", _deterministic_dropouts, [Sample((f(3, 4, 2),), name="3d"),
                                                          Sample((f(3),), name="1d")]),
    Op("dropout_p_range", lambda L, a, p: L.feature_dropout(a, p, True), [Sample((f(2, 3), 0.0))],
       errors=[(Sample((f(2, 3), 1.5)), RuntimeError), (Sample((f(2, 3), -0.5)), RuntimeError),
               (Sample((f(3), 0.5)), RuntimeError)]),
    Op("native_dropout_p_range", lambda L, a, p: L.native_dropout(a, p, True), [Sample((f(2, 3), 0.0))],
       errors=[(Sample((f(2, 3), 1.5)), RuntimeError)]),
    Op("native_layer_norm", _outputs(_native_layer_norm, (0, 3)), [Sample((f(2, 3, 4), f(4), f(4)))]),
    Op("native_layer_norm_stats", _native_layer_norm, [Sample((f(2, 3, 4), f(4), f(4)))], grad=False),
    Op("native_batch_norm", _outputs(_native_batch_norm, (0, 5, 8)),
       [Sample((f(2, 3, 4), f(3), f(3), Arg(f(3), grad=False), Arg(pos(3), grad=False)))]),
    Op("native_batch_norm_stats", _native_batch_norm, [Sample((f(2, 3, 4), f(3), f(3), f(3), pos(3)))],
       grad=False),
    Op("native_group_norm", _outputs(_native_group_norm, (0, 3)), [Sample((f(2, 4, 3, 2), f(4), f(4)))],
       errors=[(Sample((f(2, 4, 3, 3), f(4), f(4))), RuntimeError)]),
    Op("native_group_norm_stats", lambda L, x, w, b: tuple(o.detach() for o in _native_group_norm(L, x, w, b)),
       [Sample((f(2, 4, 3, 2), f(4), f(4)))], grad=False),
    Op("native_channel_shuffle", lambda L, x: (L.native_channel_shuffle(x, 2),
                                               L.nn.functional.native_channel_shuffle(x, 3)),
       [Sample((f(2, 6, 3),))], errors=[(Sample((f(1, 4, 2),)), RuntimeError)],
       grad=False),  # torch has no gradient for it
    Op("norm_except_dim", _norm_except_dim, [Sample((f(3, 4, 2),))]),
    Op("convolution", _convolution, [Sample((f(2, 3, 7), f(4, 3, 3), f(4), f(3, 2, 3), f(1, 4, 5, 6),
                                             f(2, 2, 3, 2)))]),
    Op("conv_tbc", _conv_tbc, [Sample((f(6, 2, 3), f(3, 3, 4), f(4)))],
       errors=[(Sample((f(6, 3), f(3, 3, 4), f(4))), RuntimeError), (Sample((f(6, 2, 3), f(3, 2, 4), f(4))),
                                                                    RuntimeError)]),
    Op("affine_grid_generator", lambda L, t, t3: (L.affine_grid_generator(t, [1, 2, 3, 4], False),
                                                  L.affine_grid_generator(t3, (1, 1, 2, 3, 2), True)),
       [Sample((f(1, 2, 3, lo=-1, hi=1), f(1, 3, 4, lo=-1, hi=1)))]),
    Op("grid_sampler", _grid_samplers, [Sample((f(1, 1, 3, 3), within(-1.1, 1.1)(1, 2, 1, 2), f(1, 1, 2, 3, 2),
                                                within(-1.1, 1.1)(1, 1, 2, 1, 3)), name="small"),
                                        Sample((f(1, 2, 4, 5), within(-1.1, 1.1)(1, 3, 2, 2), f(1, 2, 3, 4, 3),
                                                within(-1.1, 1.1)(1, 2, 2, 2, 3)), name="larger")],
       errors=[(Sample((f(1, 2, 3, 4, 3), within(-1, 1)(1, 2, 2, 2, 3), f(1, 2, 3, 4, 3),
                        within(-1, 1)(1, 2, 2, 2, 3))), RuntimeError)]),
    Op("grid_sampler_3d_bicubic", lambda L, x, g: L.grid_sampler_3d(x, g, 2, 0, False), [],
       errors=[(Sample((f(1, 2, 3, 4, 3), within(-1, 1)(1, 2, 2, 2, 3))), RuntimeError)], grad=False),
    Op("embedding_renorm_", _embedding_renorm, [Sample((f(5, 3),))], grad=False),
    Op("rnn_cells", _cells, [_cell_sample(), _cell_sample(3, 3, 4)]),
    Op("rnn_cell_errors", lambda L, x, h, w, u: L.rnn_tanh_cell(x, h, w, u), [],
       errors=[(Sample((f(2, 3), f(2, 4), f(4, 5), f(4, 4))), RuntimeError)], grad=False),
    Op("lstm_cell_states", lambda L, x, h, w, u: L.lstm_cell(x, [h], w, u), [],
       errors=[(Sample((f(2, 3), f(2, 4), f(16, 3), f(16, 4))), RuntimeError)], grad=False),
    Op("lstm", _lstm, [Sample((small(4, 2, 3), small(4, 2, 5), small(4, 2, 5), _layer_params(4, 3, 5, 2, 2),
                               small(5, 3), small(1, 2, 4), small(1, 2, 4), _layer_params(4, 3, 4, 1, 1, False)))],
       gradcheck=False),
    Op("lstm_proj", _lstm_proj, [Sample((small(2, 1, 2), small(1, 1, 1), small(1, 1, 2),
                                         _layer_params(4, 2, 2, 1, 1, proj=1)))]),
    Op("gru", _elman("gru"), [_elman_sample(3)], gradcheck=False),
    Op("rnn_tanh", _elman("rnn_tanh"), [_elman_sample(1)], gradcheck=False),
    Op("rnn_relu", _elman("rnn_relu"), [_elman_sample(1)], gradcheck=False),
    # one small layer each, for the float64 gradcheck and gradgradcheck (the stacks above
    # are compared with torch, and finite differences of them take minutes)
    Op("lstm_small", lambda L, x, h, c, p: tuple(L.lstm(x, (h, c), p, True, 1, 0.0, False, False, False)),
       [Sample((small(2, 1, 2), small(1, 1, 2), small(1, 1, 2), _layer_params(4, 2, 2, 1, 1)))]),
    *[Op(f"{name}_small", lambda L, x, h, p, name=name: tuple(getattr(L, name)(x, h, p, False, 1, 0.0, False,
                                                                                    False, False)),
         [Sample((small(2, 1, 2), small(1, 1, 2), _layer_params(gates, 2, 2, 1, 1, biases=False)))])
      for name, gates in (("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1))],
]

# torch runs these as one fused node; ember composes them from ops (same values and gradients)
NODE_NAMES_DIFFER = {"F.linear_cross_entropy", "affine_grid_generator", "conv_tbc", "grid_sampler", "gru", "gru_small",
                     "lstm", "lstm_proj", "lstm_small", "native_group_norm", "norm_except_dim", "rnn_relu",
                     "rnn_relu_small", "rnn_tanh", "rnn_tanh_small"}
