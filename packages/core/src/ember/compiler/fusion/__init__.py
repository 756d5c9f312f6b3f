"""Fusion: runs of elementwise ops and the row reductions they feed (softmax, log_softmax,
layer_norm, cross-entropy, sums and means over the last dimension) become one generated
numba loop each, forward and backward, for numpy arrays, and one generated CUDA kernel
each (``cuda_codegen``) for cupy arrays, chosen at each call by the arrays' backend;
matrix products, convolutions and everything else stay the ops they are, between the
fused regions. The loops compute in float32 or float64: a float16 or bfloat16 region
(autocast's) computes in float32 and rounds its results once, as torch's generated kernels do.

A region is a run of consecutive graph nodes that all lower to the row program and share
one layout ``[*L, C]``; its inputs come from before it, its outputs are the values used
after it. Regions of a single op are left alone (the op's own kernel already does one
pass).

In a graph with symbolic sizes (``node.meta["dynamic_dims"]``) a region's row count is
read from its inputs at each call, so one kernel serves every size; a region whose row
width is dynamic is not fused (the lowerings use the width as a constant). The size
nodes between ops (``call_method size``, their arithmetic) do not end a region, and a
symbolic number (an int or float argument left symbolic, a size, their arithmetic) is a
scalar input of the region, read at each call: the nodes computing it move before the
region's call (one computed from the region's own values ends the region instead).
"""

from __future__ import annotations

import math
import operator
import warnings

from ...ops import _dispatch
from .lower import LOWERINGS, NotFusable, lower
from .program import Program, Value
from .region import Output, Region

__all__ = ["fuse", "NotFusable"]


class _Info:
    """What a lowering may ask about its node: the region's rank and row width."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.ndim = len(shape)
        self.width = shape[-1]


def _meta(node):
    tm = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return tm if tm is not None and hasattr(tm, "shape") else None


def _kind(shape, dtype, region_shape):
    shape, lead = tuple(shape), tuple(region_shape[:-1])
    if not dtype.is_floating_point:
        if shape == lead and dtype.name == "int64":
            return "irow"
        raise NotFusable("integer operand")
    if shape == tuple(region_shape):
        return "vec"
    if math.prod(shape) == 1 and len(shape) <= len(region_shape):
        return "scalar"
    stripped = shape
    while stripped and stripped[0] == 1 and len(stripped) > 1:
        stripped = stripped[1:]
    if stripped == (region_shape[-1],):
        return "col"
    if shape == lead + (1,):
        return "row"
    raise NotFusable(f"operand of shape {list(shape)} in a region of shape {list(region_shape)}")


class _Open:
    """The region being grown."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.info = _Info(shape)
        self.p = Program()
        self.nodes: list = []
        self.values: dict = {}  # node -> Value (or ("sum"/"mean", ...) for a reduced loss)
        self.inputs: list = []  # the graph values read, in program-input order
        self.input_of: dict = {}
        self.dynamic = False  # whether its row count is symbolic

    def arg(self, a):
        if type(a).__name__ != "Node":
            if isinstance(a, (list, tuple)):
                return type(a)(self.arg(x) for x in a)
            if isinstance(a, dict):
                return {k: self.arg(v) for k, v in a.items()}
            return a
        v = self.values.get(a)
        if v is not None:
            if isinstance(v, tuple):
                raise NotFusable("a reduced loss used inside a region")
            return v
        v = self.input_of.get(a)
        if v is None and _meta(a) is None and "sym_hint" in a.meta:  # a symbolic number: one value per call
            if self._reads_region(a):
                raise NotFusable("a number computed from the region's own values")
            v = self.input_of[a] = self.p.input("scalar", a.name)
            self.inputs.append(a)
        if v is None:
            tm = _meta(a)
            if tm is None:
                raise NotFusable("operand without a shape")
            if tm.dtype != self.dtype and tm.dtype.is_floating_point:
                raise NotFusable("mixed dtypes")
            v = self.input_of[a] = self.p.input(_kind(tm.shape, tm.dtype, self.shape), a.name)
            self.inputs.append(a)
        return v

    def _reads_region(self, a) -> bool:
        """Whether ``a``, a number computed amid the region (a size node does not end it),
        depends on one of its nodes: the region's call, which comes before them all, could
        not read it."""
        if not self.nodes:
            return False
        first, stack, seen = self.nodes[0], [a], set()
        while stack:
            n = stack.pop()
            if n in self.values:
                return True
            if n not in seen and n > first:
                seen.add(n)
                stack.extend(n.all_input_nodes)
        return False

    def add(self, node, name) -> None:
        before = len(self.p.values), len(self.p.inputs), dict(self.input_of), list(self.inputs)
        try:
            out = lower(self.p, name, self.arg(node.args), self.arg(node.kwargs), self.info)
            tm = _meta(node)
            if tm is None:
                raise NotFusable("result without a shape")
            if isinstance(out, Value):
                if out.kind == "vec" and tuple(tm.shape) != self.shape:
                    raise NotFusable("result of another shape")
                if out.kind not in ("vec", "row"):
                    raise NotFusable(f"a {out.kind} result")
        except Exception as e:  # fusion only speeds up: whatever a lowering cannot take stays the op it is
            n_values, n_inputs, self.input_of, self.inputs = before
            del self.p.values[n_values:]
            del self.p.inputs[n_inputs:]
            self.p._memo = {k: v for k, v in self.p._memo.items() if v.id < n_values}
            raise e if isinstance(e, NotFusable) else NotFusable(f"{name}: {type(e).__name__}: {e}") from e
        self.values[node] = out
        self.nodes.append(node)


def _is_size(node) -> bool:
    """A node computing a symbolic size (a Python int), not a tensor."""
    if node.op == "call_method":
        return node.target in ("size", "numel")
    return node.op == "call_function" and "sym_hint" in node.meta


def _dynamic(node) -> frozenset:
    return node.meta.get("dynamic_dims", frozenset()) if hasattr(node, "meta") else frozenset()


def _op_name(node):
    """The op's name when a lowering exists for it, else None."""
    if node.op != "call_function":
        return None
    name = _entry_name(node) or getattr(node.target, "__name__", None)
    return name if name in LOWERINGS else None


def _split_linear_bias(graph) -> None:
    """``linear(x, w, b)`` whose users all fuse becomes ``linear(x, w) + b``: the product
    stays on BLAS, and its bias joins the loop that follows (the epilogue), forward and
    backward (the bias gradient is that loop's column sum)."""
    import ember
    for node in list(graph.nodes):
        if node.op != "call_function" or _entry_name(node) != "linear":
            continue
        names = ("input", "weight", "bias")
        given = dict(zip(names, node.args)) | dict(node.kwargs)
        x, w, b = (given.get(n) for n in names)
        if type(b).__name__ != "Node" or set(given) - set(names) or not node.users:
            continue
        if any(_op_name(u) is None for u in node.users) or _meta(node) is None:
            continue
        with graph.inserting_after(node):
            bare = graph.call_function(node.target, (x, w))
        bare.meta = dict(node.meta)
        with graph.inserting_after(bare):
            biased = graph.call_function(ember.add, (bare, b))
        biased.meta = dict(node.meta)
        node.replace_all_uses_with(biased)
        graph.erase_node(node)


_MAX_POOLS = ("max_pool1d", "max_pool2d", "max_pool3d")
_POOL_ARGS = ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")


def _pool_before_relu(graph) -> None:
    """``max_pool(relu(x))`` becomes ``relu(max_pool(x))`` where the pool is the relu's only
    user: both are monotone, so the values are the same, and so are the gradients (a window
    whose maximum is positive routes its gradient to the same first maximum; one whose
    maximum is not passes none either way), while the relu and its backward mask run on the
    pooled tensor, a quarter of the elements for a 2x2 pool (LeNet's, VGG's, ResNet's stem)."""
    for pool in list(graph.nodes):
        if pool.op != "call_function" or _entry_name(pool) not in _MAX_POOLS:
            continue
        given = dict(zip(_POOL_ARGS, pool.args)) | dict(pool.kwargs)
        relu = given.get("input")
        if (given.get("return_indices") or type(relu).__name__ != "Node" or relu.op != "call_function"
                or _entry_name(relu) != "relu" or len(relu.args) != 1 or relu.kwargs or len(relu.users) != 1):
            continue
        with graph.inserting_before(pool):
            pooled = graph.call_function(pool.target, (relu.args[0],) + tuple(pool.args[1:]), dict(pool.kwargs))
            rectified = graph.call_function(relu.target, (pooled,))
        pooled.meta, rectified.meta = dict(pool.meta), dict(pool.meta)
        pool.replace_all_uses_with(rectified)
        graph.erase_node(pool)
        graph.erase_node(relu)


def _entry_name(node):
    entry = _dispatch.entry_of(node.target)
    return entry.name if entry is not None else None


def fuse(gm, device: str = "cpu"):
    """Rewrite ``gm``'s graph in place, each fusable region into one call; returns ``gm``.
    ``device`` is where the example inputs live ("cpu" or "cuda"): a region compiles its
    numba kernels at once for "cpu", and only if a call brings numpy arrays for "cuda" (its
    CUDA kernels are generated and compiled at their first call on cupy arrays)."""
    graph = gm.graph
    _pool_before_relu(graph)
    _split_linear_bias(graph)
    regions, current = [], None
    for node in list(graph.nodes):
        if _is_size(node):  # a number (operator.mul of two sizes too): the region goes on past it
            continue
        name = _op_name(node)
        if name is None:
            current = _close(current, regions)
            continue
        for _ in (0, 1):  # into the open region, else into a new one
            if current is None:
                first = next((a for a in node.args if type(a).__name__ == "Node" and _meta(a) is not None
                              and _meta(a).dtype.is_floating_point), None)
                if first is None or not _meta(first).shape or 0 in tuple(_meta(first).shape):
                    break  # a scalar or an empty tensor: nothing to loop over
                if len(_meta(first).shape) - 1 in _dynamic(first):
                    break  # a symbolic row width: the lowerings would bake it
                current = _Open(_meta(first).shape, _meta(first).dtype)
                current.dynamic = bool(_dynamic(first))
            try:
                current.add(node, name)
                break
            except NotFusable:
                current = _close(current, regions)
    _close(current, regions)
    rewritten = False
    for region in reversed(regions):  # a later region may read an earlier one's values: rewrite it first
        rewritten = _rewrite(gm, region, device) or rewritten
    if rewritten:
        graph.lint()
        gm.recompile()
    return gm


def _close(current, regions):
    if current is not None and len(current.nodes) >= 2:
        regions.append(current)
    return None


def _rewrite(gm, r: _Open, device: str = "cpu") -> bool:
    """Replace the region's nodes by one call of its ``Region``; False (the graph left as it
    is) where its backward cannot be generated."""
    graph = gm.graph
    inside = set(r.nodes)
    used_after = [n for n in r.nodes if any(u not in inside for u in n.users)]
    outputs = []
    for n in used_after:
        v, tm = r.values[n], _meta(n)
        if isinstance(v, tuple):
            outputs.append(Output(v[1], "row", tm.shape, post=v[0], weight=v[2] if v[0] == "mean" else None))
        else:
            outputs.append(Output(v, v.kind, tm.shape))
    r.p.outputs = [o.value for o in outputs]
    rows = math.prod(r.shape[:-1])
    requires_grad = [bool(getattr(_meta(a), "requires_grad", False)) and r.input_of[a].kind != "irow"
                     for a in r.inputs]
    dynamic = r.dynamic or any(_dynamic(n) for n in list(r.nodes) + list(r.inputs))
    try:
        region = Region(r.p, outputs, rows, r.shape[-1], r.dtype, requires_grad, dynamic=dynamic,
                        lead_rank=len(r.shape) - 1, device=device)
    except NotFusable:  # a backward the loop cannot compute: the ops stay, as for a lowering that fails
        return False
    name = f"fused_{len([k for k in gm.__dict__ if k.startswith('fused_')])}"
    object.__setattr__(gm, name, region)
    _hoist(r)
    with graph.inserting_before(r.nodes[0]), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # get_attr of an attribute that is no parameter or module: by design
        holder = graph.get_attr(name)
        call = graph.call_function(_call_region, (holder, *r.inputs))
        for k, n in enumerate(used_after):
            item = graph.call_function(operator.getitem, (call, k))
            item.meta = dict(n.meta)
            n.replace_all_uses_with(item)
    for n in reversed(r.nodes):
        graph.erase_node(n)
    return True


def _hoist(r: _Open) -> None:
    """Move the nodes amid the region that its call reads (the symbolic numbers computed
    between its ops, and what they read from there) before its first node, where the call
    goes, in their order; none of them reads the region (``_Open.arg``)."""
    first, needed = r.nodes[0], set()
    stack = [a for a in r.inputs if a > first]
    while stack:
        n = stack.pop()
        if n not in needed and n > first:
            needed.add(n)
            stack.extend(n.all_input_nodes)
    for n in sorted(needed):
        first.prepend(n)


def _call_region(region, *tensors):
    """A fused region's call in generated code."""
    return region(*tensors)
