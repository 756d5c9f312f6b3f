"""Optimizer update kernels: one pass per parameter over the parameter, its gradient and
its state, split over ember's threads.

``adam`` is one Adam/AdamW step in torch's order of operations (torch.optim.Adam's
single-tensor path): weight decay, ``exp_avg.lerp_(g, 1 - beta1)`` (lerp's two forms
by the weight, as torch's kernel), ``exp_avg_sq * beta2 + (1 - beta2) * g * g``, the
amsgrad maximum (NaN propagating, as torch.maximum), ``denom = sqrt(v) / bc2 + eps`` and
``param + (-step_size * exp_avg) / denom``.  Every scalar is rounded to the arrays'
dtype first, as torch's CPU kernels compute a float32 tensor with float32 scalars.
"""

from __future__ import annotations

import math

from ._runtime import jit, parallel_for

__all__ = ["adam"]


@jit
def _adam(start, stop, p, g, m, v, vmax, amsgrad, decay, l2, wd, w, beta2, c2, bc2, eps, neg_step, one):
    # every scalar comes typed from the caller: a float literal here would make the loop float64
    p, g, m, v = p[start:stop], g[start:stop], m[start:stop], v[start:stop]
    lerp_low = abs(w) < 0.5  # once, outside the loop
    if amsgrad:
        vmax = vmax[start:stop]
        for i in range(stop - start):
            pi = p[i] * decay  # 1 unless decoupled: exact
            gi = g[i] + wd * pi if l2 else g[i]
            mi = m[i]
            d = gi - mi
            mi = mi + w * d if lerp_low else gi - d * (one - w)
            vi = v[i] * beta2 + c2 * gi * gi
            hi = vmax[i]
            hi = hi if hi > vi else vi
            hi = vmax[i] if vmax[i] != vmax[i] else hi
            m[i] = mi
            v[i] = vi
            vmax[i] = hi
            p[i] = pi + neg_step * mi / (math.sqrt(hi) / bc2 + eps)
    else:
        for i in range(stop - start):
            pi = p[i] * decay
            gi = g[i] + wd * pi if l2 else g[i]
            mi = m[i]
            d = gi - mi
            mi = mi + w * d if lerp_low else gi - d * (one - w)
            vi = v[i] * beta2 + c2 * gi * gi
            m[i] = mi
            v[i] = vi
            p[i] = pi + neg_step * mi / (math.sqrt(vi) / bc2 + eps)


def adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step, lr, beta1, beta2, eps, weight_decay,
         amsgrad, decoupled_weight_decay):
    """One step in place on C-contiguous numpy arrays of one float dtype (the caller
    checked); ``grad`` already negated for maximize."""
    t = param.dtype.type
    decay = 1 - lr * weight_decay if (weight_decay != 0 and decoupled_weight_decay) else 1.0
    l2 = weight_decay != 0 and not decoupled_weight_decay
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
    step_size = lr / bias_correction1
    vmax = max_exp_avg_sq.reshape(-1) if amsgrad else exp_avg_sq.reshape(-1)
    parallel_for(_adam, param.size, param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1),
                 exp_avg_sq.reshape(-1), vmax, bool(amsgrad), t(decay), l2, t(weight_decay), t(1 - beta1),
                 t(beta2), t(1 - beta2), t(bias_correction2_sqrt), t(eps), t(-step_size), t(1.0), work_per_item=4)
