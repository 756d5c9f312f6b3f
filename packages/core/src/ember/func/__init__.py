"""``ember.func``: torch.func's function transforms (torch docs, "torch.func").

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` run the function once on inputs that
require grad and differentiate it with reverse-mode autograd; ``jvp``, ``jacfwd``,
``linearize`` and ``hessian`` get forward-mode products by the double-vjp construction (J t
is the gradient, with respect to u, of u^T J t), so they cost about twice a true
forward-mode pass. Transforms nest (``grad(grad(f))``): an inner transform keeps its results
differentiable when its inputs come from an outer one. Inputs and outputs may be tensors in
dicts, lists and tuples. ``functional_call`` and ``stack_module_state`` run modules on
parameters passed in. ``vmap`` maps a function of one example over a batch through
batching rules on the dispatch seam; the transforms compose with it (``vmap(grad(f))``
gives per-example gradients: inputs not mapped are expanded so each example gets its own).
"""

from __future__ import annotations

import functools

from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ._batched import active_levels, from_base, to_base
from ._functional_call import functional_call, stack_module_state
from ._pytree import tree_flatten, tree_map, tree_unflatten
from ._replace_batch_norm import replace_all_batch_norm_modules_
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "functional_call",
           "stack_module_state", "vmap", "replace_all_batch_norm_modules_"]


def _track(x):
    """``x`` as an input to differentiate: connected to an outer transform's graph when it
    is in one (so nested transforms compose), else a fresh leaf."""
    if not isinstance(x, Tensor):
        return x
    levels = active_levels()
    if levels:  # under vmap: a leaf holding every level's batch (see _base_grad)
        base = to_base(x, levels)
        return from_base(base.view_as(base) if base.requires_grad else base.detach().requires_grad_(True), levels)
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _base_grad(outputs, inputs, grad_outputs, **options):
    """``autograd.grad``, also under vmap: there the tensors are batched, and the gradient is
    taken of their bases (every level's batch as leading dimensions). The examples of a
    batch are independent, so the gradient of the batch is every example's gradient."""
    levels = active_levels()
    if not levels:
        return _autograd_grad(outputs, inputs, grad_outputs, **options)
    def leaf(x):
        for _ in levels:
            x = x._full
        return x
    got = _autograd_grad([to_base(o, levels) for o in outputs], [leaf(x) for x in inputs],
                         [to_base(g, levels) for g in grad_outputs], **options)
    return tuple(None if g is None else from_base(g, levels) for g in got)


def _leaf_like(o):
    """A zero tensor like ``o`` that requires grad (batched as ``o``'s inputs are, under vmap)."""
    from ..ops.creation import zeros_like
    levels = active_levels()
    if not levels:
        return zeros_like(o).requires_grad_(True)
    return from_base(zeros_like(to_base(o, levels)).requires_grad_(True), levels)


def _argnums_tuple(argnums, nargs, name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{name}: Expected argnums to be a non-empty tuple or int, got {argnums}")
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    return tuple(a % nargs for a in nums)


def _grads(outputs, inputs, cotangents):
    """d(cotangents . outputs)/d inputs: zeros for inputs the outputs do not reach; the
    result stays differentiable when an input belongs to an outer transform."""
    from ..ops.creation import zeros_like
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if isinstance(o, Tensor) and o.requires_grad]
    keep = any(getattr(x, "grad_fn", None) is not None for x in inputs)
    if pairs:
        got = _base_grad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=True,
                         create_graph=keep, allow_unused=True)
    else:
        got = (None,) * len(inputs)
    return [zeros_like(x) if g is None else g for g, x in zip(got, inputs)]


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def _detach_unless_outer(tree, inputs):
    keep = any(getattr(x, "grad_fn", None) is not None for x in inputs)
    return tree if keep else tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def grad_and_value(func, argnums=0, has_aux=False):
    """``(gradient, value)`` of a function returning a scalar tensor, with respect to the
    positional arguments ``argnums`` (an int, or a tuple giving a tuple of gradients); with
    ``has_aux``, ``func`` returns ``(value, aux)`` and the result is ``(gradient, (value, aux))``.

    Raises RuntimeError when the output is not a scalar tensor, as torch.func does."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        with enable_grad():
            args = list(args)
            flat, specs = [], []
            for a in nums:
                leaves, spec = tree_flatten(args[a])
                leaves = [_track(x) for x in leaves]
                args[a] = tree_unflatten(leaves, spec)
                flat.append(leaves)
                specs.append(spec)
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            from ..ops.creation import ones_like
            inputs = [x for leaves in flat for x in leaves]
            grads = iter(_grads([out], inputs, [ones_like(out)]))
            per_arg = [tree_unflatten([next(grads) for _ in leaves], spec) for leaves, spec in zip(flat, specs)]
        result = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        result = _detach_unless_outer(result, inputs)
        value = _detach_unless_outer(out, inputs)
        if has_aux:
            return result, (value, _detach_unless_outer(aux, inputs))
        return result, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar-valued ``func`` (torch.func.grad); see ``grad_and_value``.

    ``argnums`` (an int or a tuple of ints) names the positional arguments differentiated
    (the result is one gradient, or a tuple of them); with ``has_aux`` ``func`` returns
    ``(output, aux)`` and the result is ``(gradient, aux)``."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(output, vjp_fn)``: ``vjp_fn(cotangents)`` gives the tuple of vector-Jacobian
    products, one per primal (torch.func.vjp); with ``has_aux``, ``(output, vjp_fn, aux)``.

    ``func`` is called on the ``primals`` (tensors or pytrees of them)."""
    with enable_grad():
        flat, spec = tree_flatten(list(primals))
        flat = [_track(x) for x in flat]
        tracked = tree_unflatten(flat, spec)
        out, aux = _split_aux(func(*tracked), has_aux, "vjp")
    outs, out_spec = tree_flatten(out)

    def vjp_fn(cotangents):
        cots, cot_spec = tree_flatten(cotangents)
        if len(cots) != len(outs):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cot_spec}, primal output: {out_spec}")
        with enable_grad():
            grads = _grads(outs, flat, cots)
        return tuple(_detach_unless_outer(tree_unflatten(grads, spec), flat))

    result = (_detach_unless_outer(out, flat), vjp_fn)
    return result + (_detach_unless_outer(aux, flat),) if has_aux else result


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(output, jvp_out)``: the Jacobian of ``func`` at ``primals`` times ``tangents``
    (torch.func.jvp), by the double-vjp construction; with ``has_aux``, ``(output, jvp_out, aux)``.

    ``primals`` and ``tangents`` are tuples of the same length; ``strict`` is accepted (an
    output independent of the inputs gives a zero product)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same length.")
    from ..ops.creation import zeros_like
    with enable_grad():
        flat, spec = tree_flatten(list(primals))
        flat = [_track(x) for x in flat]
        out, aux = _split_aux(func(*tree_unflatten(flat, spec)), has_aux, "jvp")
        outs, out_spec = tree_flatten(out)
        dummies = [_leaf_like(o) for o in outs]
        # u^T J, linear in u, kept differentiable so that its gradient in u is J t
        vjps = _base_grad(outs, flat, dummies, create_graph=True, allow_unused=True)
        used = [(v, t) for v, t in zip(vjps, tree_flatten(list(tangents))[0]) if v is not None]
        if used:
            jt = _base_grad([v for v, _ in used], dummies, [t for _, t in used], retain_graph=True,
                            create_graph=any(x.grad_fn is not None for x in flat), allow_unused=True)
        else:
            jt = (None,) * len(outs)
        jt = [zeros_like(o) if g is None else g for g, o in zip(jt, outs)]
    result = (_detach_unless_outer(out, flat), _detach_unless_outer(tree_unflatten(jt, out_spec), flat))
    return result + (_detach_unless_outer(aux, flat),) if has_aux else result


def linearize(func, *primals):
    """``(output, jvp_fn)`` with ``jvp_fn(*tangents)`` the Jacobian-vector product at
    ``primals`` (torch.func.linearize).

    ``func`` is called on the ``primals``; ``jvp_fn`` recomputes ``jvp`` at them on each
    call."""
    out = jvp(func, primals, tuple(tree_map(lambda t: t * 0 if isinstance(t, Tensor) else t, primals)))[0]
    return out, lambda *tangents: jvp(func, primals, tangents)[1]


def _jacobian(func, argnums, has_aux, products, name):
    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), name)
        return products(func, args, nums, has_aux, isinstance(argnums, int))
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to the arguments ``argnums``, one vector-Jacobian
    product per output element (torch.func.jacrev): ``[*output.shape, *input.shape]``.
    ``chunk_size`` is accepted; the rows are computed one at a time.

    With ``has_aux`` ``func`` returns ``(output, aux)`` and the result is ``(jacobian,
    aux)``."""
    return _jacobian(func, argnums, has_aux, _rev, "jacrev")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func``, one Jacobian-vector product per input element
    (torch.func.jacfwd); the same layout as ``jacrev``.

    ``argnums`` and ``has_aux`` as in ``jacrev``; ``randomness`` is accepted (the products
    run one after another, so random ops need no policy)."""
    return _jacobian(func, argnums, has_aux, _fwd, "jacfwd")


def hessian(func, argnums=0):
    """The Hessian of a scalar-valued ``func``: ``jacfwd(jacrev(func, argnums), argnums)``,
    as torch.func defines it.

    ``argnums`` (an int or a tuple of ints) names the positional arguments differentiated."""
    return jacfwd(jacrev(func, argnums), argnums)


def _rev(func, args, nums, has_aux, single):
    from ..ops.creation import zeros_like
    from ..ops.shape import stack
    with enable_grad():
        args = list(args)
        for a in nums:
            args[a] = tree_map(_track, args[a])
        out, aux = _split_aux(func(*args), has_aux, "jacrev")
        outs, out_spec = tree_flatten(out)
        ins = [leaf for a in nums for leaf in tree_flatten(args[a])[0]]
        jac_per_out = []
        for o in outs:
            rows = []
            for i in range(o.numel()):
                basis = zeros_like(o).reshape(-1)
                basis[i] = 1
                rows.append(_grads([o], ins, [basis.reshape(o.shape)]))
            jac_per_out.append([stack([r[k] for r in rows]).reshape(*o.shape, *ins[k].shape) if rows else
                                zeros_like(ins[k]).reshape(*o.shape, *ins[k].shape) for k in range(len(ins))])
    return _assemble(jac_per_out, out_spec, args, nums, ins, aux, has_aux, single)


def _fwd(func, args, nums, has_aux, single):
    from ..ops.creation import zeros_like
    from ..ops.shape import stack
    ins = [leaf for a in nums for leaf in tree_flatten(args[a])[0]]
    out = aux = None
    cols = []  # per input leaf: per element: the output leaves' jvps
    for k, x in enumerate(ins):
        per_element = []
        for i in range(x.numel()):
            tangent_leaves = [zeros_like(y) for y in ins]
            flat_t = tangent_leaves[k].reshape(-1)
            flat_t[i] = 1
            tangents, pos = [], 0
            for j in range(len(args)):
                if j in nums:
                    leaves, spec = tree_flatten(args[j])
                    tangents.append(tree_unflatten(tangent_leaves[pos:pos + len(leaves)], spec))
                    pos += len(leaves)
                else:
                    tangents.append(tree_map(lambda t: t * 0 if isinstance(t, Tensor) else t, args[j]))
            res = jvp(func, tuple(args), tuple(tangents), has_aux=has_aux)
            out, jt = res[0], res[1]
            aux = res[2] if has_aux else None
            per_element.append(tree_flatten(jt)[0])
        cols.append(per_element)
    outs, out_spec = tree_flatten(out)
    # jacobian[o][k]: [*out.shape, *in.shape] from the per-element jvps (the last axes index the input)
    jac_per_out = [[stack([pe[oi] for pe in cols[k]], dim=-1).reshape(*outs[oi].shape, *ins[k].shape)
                    for k in range(len(ins))] for oi in range(len(outs))]
    return _assemble(jac_per_out, out_spec, args, nums, ins, aux, has_aux, single)


def _assemble(jac_per_out, out_spec, args, nums, ins, aux, has_aux, single):
    """The Jacobian as torch.func nests it: output structure outside, then one entry per
    argnum (the argument's own structure), a plain tensor for a single argnum."""
    per_out = []
    for row in jac_per_out:
        pos, per_arg = 0, []
        for a in nums:
            leaves, spec = tree_flatten(args[a])
            per_arg.append(tree_unflatten(row[pos:pos + len(leaves)], spec))
            pos += len(leaves)
        per_out.append(per_arg[0] if single else tuple(per_arg))
    jac = _detach_unless_outer(tree_unflatten(per_out, out_spec), ins)
    return (jac, _detach_unless_outer(aux, ins)) if has_aux else jac
