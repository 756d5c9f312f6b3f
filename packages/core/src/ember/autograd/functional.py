"""Higher-level differentiation of functions (torch.autograd.functional): vjp, jvp,
jacobian, hessian, vhp and hvp.

Each takes ``func`` (tensors in, a tensor or a tuple of tensors out) and its ``inputs``
(a tensor or a tuple of them), runs it on detached copies that require grad, and returns
results shaped as torch does: a single tensor stays a single tensor, tuples stay tuples.
Forward-mode products (``jvp``, ``hvp``) use the double-vjp identity (J v is the
gradient, with respect to u, of u^T J v), so they need no forward-mode AD.  With
``create_graph`` the results are differentiable again; ``strict`` raises when an output
does not depend on an input.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import grad as _grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, name):
    if isinstance(x, Tensor):
        return (x,), True
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return tuple(x), False
    raise TypeError(f"The {name} given to the function must be either a Tensor or a tuple of Tensors but the "
                    f"value given is of type {type(x).__name__}.")


def _prepare(inputs, create_graph):
    inputs, single = _as_tuple(inputs, "inputs")
    # with create_graph, an input already in a graph stays connected to it (as a view)
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(True)
                 for t in inputs), single


def _zeros_like_where_none(grads, like, strict, what):
    from ..ops.creation import zeros_like
    out = []
    for i, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This "
                                   f"is not allowed in strict mode{what}.")
            g = zeros_like(x)
        out.append(g)
    return tuple(out)


def _vjp_of(outputs, inputs, v, create_graph, strict):
    """v^T d outputs / d inputs, zeros for inputs the outputs do not reach (unless strict)."""
    needed = [(o, g) for o, g in zip(outputs, v) if o.requires_grad]
    if not needed:
        grads = (None,) * len(inputs)
    else:
        grads = _grad([o for o, _ in needed], inputs, [g for _, g in needed], create_graph=create_graph,
                      retain_graph=True, allow_unused=True)
    return _zeros_like_where_none(grads, inputs, strict, "")


def _check_v(v, outputs, name):
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        from ..ops.creation import ones_like
        return (ones_like(outputs[0]),)
    v, _ = _as_tuple(v, "v")
    if len(v) != len(outputs):
        raise RuntimeError(f"The given v should contain a single Tensor for each output of {name}")
    for a, b in zip(v, outputs):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: {name} v has a shape of {list(a.shape)} and the output has a "
                               f"shape of {list(b.shape)}.")
    return v


def _input_vector(v, xs):
    """The vector v paired with the inputs (ones for a single one-element input)."""
    if v is not None:
        return _as_tuple(v, "v")[0]
    if len(xs) != 1 or xs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    from ..ops.creation import ones_like
    return (ones_like(xs[0]),)


def _finish(t, create_graph):
    return t if create_graph else t.detach()


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the outputs of ``func`` and the vector-Jacobian product with
    ``v`` (torch.autograd.functional.vjp).

    ``func`` takes the tensors ``inputs`` (a tensor or a tuple of them) and returns a tensor
    or a tuple of tensors. With ``create_graph`` the results are part of the graph (for
    higher derivatives), else detached. With ``strict`` an input the outputs do not depend
    on raises RuntimeError; otherwise its part is zeros. ``v`` has the outputs' shapes; it
    may be None for a single output of one element."""
    with enable_grad():
        xs, single_in = _prepare(inputs, create_graph)
        raw = func(*xs)
        outputs, single_out = _as_tuple(raw, "outputs of the user-provided function")
        v = _check_v(v, outputs, "func")
        grads = _vjp_of(outputs, xs, v, create_graph, strict)
    outs = tuple(_finish(o, create_graph) for o in outputs)
    grads = tuple(_finish(g, create_graph) for g in grads)
    return (outs[0] if single_out else outs), (grads[0] if single_in else grads)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the outputs of ``func`` and the Jacobian-vector product with
    ``v``, by the double-vjp construction (torch.autograd.functional.jvp).

    ``func`` takes the tensors ``inputs`` (a tensor or a tuple of them) and returns a tensor
    or a tuple of tensors. With ``create_graph`` the results are part of the graph (for
    higher derivatives), else detached. With ``strict`` an input the outputs do not depend
    on raises RuntimeError; otherwise its part is zeros. ``v`` has the inputs' shapes; it
    may be None for a single input of one element."""
    from ..ops.creation import zeros_like
    with enable_grad():
        xs, single_in = _prepare(inputs, create_graph)
        raw = func(*xs)
        outputs, single_out = _as_tuple(raw, "outputs of the user-provided function")
        v = _input_vector(v, xs)
        # J v = d/du (u^T J v): u is a dummy cotangent that the vjp is linear in
        us = tuple(zeros_like(o).requires_grad_(True) for o in outputs)
        vjps = _vjp_of(outputs, xs, us, True, strict)
        jv = _vjp_of(vjps, us, v, create_graph, strict)
    outs = tuple(_finish(o, create_graph) for o in outputs)
    jv = tuple(_finish(g, create_graph) for g in jv)
    return (outs[0] if single_out else outs), (jv[0] if single_out else jv)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian d func / d inputs (torch.autograd.functional.jacobian): for one input and
    one output a tensor of shape ``output.shape + input.shape``; tuples of them (outputs
    outer) otherwise.

    ``func`` takes the tensors ``inputs`` (a tensor or a tuple of them) and returns a tensor
    or a tuple of tensors. With ``create_graph`` the results are part of the graph (for
    higher derivatives), else detached. With ``strict`` an input the outputs do not depend
    on raises RuntimeError; otherwise its part is zeros. ``vectorize`` and ``strategy`` are
    accepted: the rows are computed one output element at a time, in reverse mode."""
    from ..ops.shape import stack
    with enable_grad():
        xs, single_in = _prepare(inputs, create_graph)
        raw = func(*xs)
        outputs, single_out = _as_tuple(raw, "outputs of the user-provided function")
        rows = []
        for out in outputs:
            flat = out.reshape(-1)
            per_input = [[] for _ in xs]
            for k in range(flat.numel()):
                if flat.requires_grad:
                    gs = _grad(flat[k], xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
                else:
                    gs = (None,) * len(xs)
                gs = _zeros_like_where_none(gs, xs, strict, " (jacobian)")
                for i, g in enumerate(gs):
                    per_input[i].append(g)
            blocks = []
            for i, x in enumerate(xs):
                if per_input[i]:
                    block = stack(per_input[i], 0).reshape(tuple(out.shape) + tuple(x.shape))
                else:  # an output without elements
                    block = x.new_zeros(tuple(out.shape) + tuple(x.shape))
                blocks.append(_finish(block, create_graph))
            rows.append(blocks[0] if single_in else tuple(blocks))
    return rows[0] if single_out else tuple(rows)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The matrix of second derivatives of a scalar-valued ``func`` at ``inputs``: shape
    ``input.shape * 2`` for one input, a tuple of tuples for several
    (torch.autograd.functional.hessian).

    ``create_graph`` and ``strict`` as in ``jacobian``; ``vectorize`` and
    ``outer_jacobian_strategy`` are accepted and unused. RuntimeError when ``func`` does not
    return one element."""
    xs, single_in = _as_tuple(inputs, "inputs")

    def gradient(*ys):
        out = func(*ys)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        gs = _grad(out.reshape(()), ys, create_graph=True, allow_unused=True)
        gs = _zeros_like_where_none(gs, ys, strict, " (hessian)")
        return gs[0] if single_in else gs
    return jacobian(gradient, xs[0] if single_in else xs, create_graph=create_graph, strict=strict)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a scalar-valued ``func``, H its Hessian at ``inputs``
    (torch.autograd.functional.vhp); ``v`` has the inputs' shapes, ``create_graph`` and
    ``strict`` as in ``vjp``."""
    return _hessian_product(func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar-valued ``func``, H its Hessian at ``inputs`` (H is
    symmetric, so this equals ``vhp``) (torch.autograd.functional.hvp); ``v`` has the
    inputs' shapes, ``create_graph`` and ``strict`` as in ``vjp``."""
    return _hessian_product(func, inputs, v, create_graph, strict)


def _hessian_product(func, inputs, v, create_graph, strict):
    with enable_grad():
        xs, single_in = _prepare(inputs, create_graph)
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hvp should return a single Tensor with a single element")
        v = _input_vector(v, xs)
        gs = _grad(out.reshape(()), xs, create_graph=True, allow_unused=True)
        gs = _zeros_like_where_none(gs, xs, strict, " (hvp)")
        hv = _vjp_of(gs, xs, v, create_graph, strict)  # H v: the vjp of the gradient
    hv = tuple(_finish(h, create_graph) for h in hv)
    return _finish(out, create_graph), (hv[0] if single_in else hv)
