"""Finite-difference checks of gradients (torch.autograd.gradcheck / gradgradcheck)."""

from __future__ import annotations

import numpy

from . import grad_mode

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _tensors(inputs):
    from .._tensor import Tensor
    return [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]


def _outputs(fn, inputs):
    out = fn(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _numerical_jacobian(fn, inputs, wrt, out_index, eps):
    """d out / d x by central differences, as a [numel(x), numel(out)] array."""
    x = wrt._data  # perturbed in place, through its own strides (it may be a non-contiguous view)
    with grad_mode.no_grad():
        n_out = _outputs(fn, inputs)[out_index].numel()
        jac = numpy.zeros((x.size, n_out))
        for i in range(x.size):
            at = numpy.unravel_index(i, x.shape)
            orig = x[at].item()
            x[at] = orig + eps
            plus = numpy.array(_outputs(fn, inputs)[out_index].__array__(), dtype=numpy.float64).reshape(-1)
            x[at] = orig - eps
            minus = numpy.array(_outputs(fn, inputs)[out_index].__array__(), dtype=numpy.float64).reshape(-1)
            x[at] = orig
            jac[i] = (plus - minus) / (2 * eps)
    return jac


def _analytical_jacobian(fn, inputs, wrt_list, out_index):
    from ..ops.creation import zeros_like
    from . import grad as autograd_grad
    out = _outputs(fn, inputs)[out_index]
    n = out.numel()
    jacs = [numpy.zeros((w.numel(), n)) for w in wrt_list]
    if not out.requires_grad:  # a constant output (a zero gradient): its Jacobian is zero, as torch's
        return jacs
    for j in range(n):
        go = zeros_like(out)
        go._data.reshape(-1)[j] = 1
        grads = autograd_grad([out], wrt_list, [go], retain_graph=True, allow_unused=True)
        for k, g in enumerate(grads):
            if g is not None:
                jacs[k][:, j] = numpy.asarray(g.__array__(), dtype=numpy.float64).reshape(-1)
    return jacs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **kwargs) -> bool:
    """Compare the gradients autograd computes with central finite differences.

    Inputs that require grad should be float64 (float32 is too coarse for ``eps``). Returns
    True, or raises GradcheckError (False when ``raise_exception=False``) on a mismatch.

    ``func`` takes the ``inputs`` (a tensor or a tuple) and returns a tensor or a tuple of
    them; ``eps`` is the finite-difference step; the Jacobians must agree within ``atol`` +
    ``rtol`` * ``|numerical|`` (numpy.allclose). torch's other keywords are accepted and unused
    (torch.autograd.gradcheck)."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    wrt = _tensors(inputs)
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    outs = _outputs(func, inputs)
    for oi, out in enumerate(outs):
        if not (out.dtype.is_floating_point or out.dtype.is_complex):
            continue
        analytical = _analytical_jacobian(func, inputs, wrt, oi)
        for k, w in enumerate(wrt):
            numerical = _numerical_jacobian(func, inputs, w, oi, eps)
            if not numpy.allclose(analytical[k], numerical, rtol=rtol, atol=atol):
                if raise_exception:
                    raise GradcheckError(
                        f"Jacobian mismatch for output {oi} with respect to input {k},\n"
                        f"numerical:{numerical}\nanalytical:{analytical[k]}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **kwargs) -> bool:
    """gradcheck of the gradient itself: second derivatives through create_graph=True.

    ``func`` and ``inputs`` as in ``gradcheck``; ``grad_outputs`` are the vectors of the
    first backward pass (random ones that require grad when None); ``eps``, ``atol``,
    ``rtol`` and ``raise_exception`` as there (torch.autograd.gradgradcheck)."""
    from ..ops.creation import randn_like
    from . import grad as autograd_grad
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = [randn_like(o, dtype=o.dtype).requires_grad_() for o in outs]
    n_in = len(inputs)

    def first_grads(*args):
        ins, gos = args[:n_in], args[n_in:]
        wrt = _tensors(ins)
        with grad_mode.enable_grad():  # also when the finite differences run under no_grad
            pairs = [(o, g) for o, g in zip(_outputs(func, ins), gos) if o.requires_grad]
            return autograd_grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True,
                                 allow_unused=True)

    return gradcheck(lambda *a: tuple(g for g in first_grads(*a) if g is not None),
                     inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
