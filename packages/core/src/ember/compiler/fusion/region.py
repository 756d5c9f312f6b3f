"""A fused region at run time: the generated forward kernel, and an autograd node whose
backward is the generated backward kernel (which recomputes the forward from the saved
inputs: a region saves its inputs only).

The kernels are chosen at each call by the arrays' backend: numpy arrays run the numba
kernels (``codegen``), cupy arrays the CUDA ones (``cuda_codegen``, launched by
``cuda_run``), both generated from the same row program and the same schedule. A region
made for CUDA tensors compiles its numba kernels only if a call ever brings numpy arrays.
"""

from __future__ import annotations

import threading

import numpy

from ..._tensor import Tensor, _make
from ...autograd import grad_mode
from ...autograd.graph import record
from ...cpu.kernels import _runtime
from .codegen import compile_program
from .grad import gradients
from .lower import NotFusable
from .program import Program, Value, costly

__all__ = ["Region", "Output", "on_cuda"]


def on_cuda(a) -> bool:
    """Whether ``a`` (an array) is a cupy array: the CUDA kernels serve it."""
    return type(a).__module__.startswith("cupy")


def cupy_module():
    import cupy
    return cupy


class Output:
    """A region result: ``value`` written as a ``kind`` array ("vec" or "row") of ``shape``;
    ``post`` reduces a per-row loss over the rows: None, "sum" or "mean" (divided by the
    sum of the per-row ``weight`` value, the targets not ignored; without a ``weight``, by
    the number of elements, for a mean over all of them)."""

    __slots__ = ("value", "kind", "shape", "post", "weight")

    def __init__(self, value, kind, shape, post=None, weight=None):
        self.value, self.kind, self.shape, self.post, self.weight = value, kind, tuple(shape), post, weight


class Region:
    """``program`` on ``rows`` rows of width ``width``; ``requires_grad`` says which of its
    inputs (in call order) get gradients. The forward kernel also writes the per-row
    values the backward needs (a norm's mean and inverse deviation, a softmax's max and
    sum), so the backward recomputes elementwise values only. ``dynamic``: the row count
    (and the leading dims of the results) is read from the inputs at each call, the
    ``lead_rank`` dims before the row width."""

    def __init__(self, program: Program, outputs: list[Output], rows: int, width: int, dtype, requires_grad,
                 dynamic=False, lead_rank=None, device="cpu"):
        self.p, self.outputs = program, outputs
        self.rows, self.width, self.dtype = rows, width, dtype
        self.dynamic, self.lead_rank = dynamic, lead_rank
        self.np_dtype = numpy.dtype(dtype.name)
        # float16 and bfloat16 regions compute in float32 (see ``compute_dtype``)
        self._compute = numpy.dtype(numpy.float32) if dtype.name in ("float16", "bfloat16") else self.np_dtype
        self.inputs = list(program.inputs)
        self.weights = [o.weight for o in outputs if o.post == "mean" and o.weight is not None]
        self.saved: list[Value] = []
        self.wrt, self.zero_grads, self.bwd_inputs = [], [], []
        self.bwd_values, self.bwd_kinds = [], []
        if any(requires_grad):
            self._build_backward(requires_grad)
        self.has_backward = bool(self.bwd_values)
        self.fwd_values = [o.value for o in outputs] + self.weights + self.saved
        self.fwd_kinds = [o.kind for o in outputs] + ["row"] * len(self.weights) + [v.kind for v in self.saved]
        # what each call reads, fixed here so that a call of a small region costs little Python
        self._in_kinds = [v.kind for v in self.inputs]
        self._bwd_in_kinds = [v.kind for v in self.bwd_inputs] if self.has_backward else []
        position = {v.id: k for k, v in enumerate(self.inputs)}
        self._wrt_at = {position[v.id]: z for v, z in zip(self.wrt, self.zero_grads)}  # input -> no gradient
        self._plain = not self.weights and all(o.post is None for o in outputs)  # results as the kernel writes them
        self.forward_kernel = self.backward_kernel = None  # numba's
        self._lock = threading.Lock()
        self._cuda: dict = {}  # dtype name -> (forward, backward) generated CUDA kernels
        self._bounds: dict = {}  # (rows, parts) -> the parts' first rows, as the kernels take them (static regions)
        self._unreached_by: dict = {}  # which results lack a gradient -> the operands that then take none
        if device == "cpu":
            self._numba()

    def _numba(self):
        """The numba kernels (forward, backward or None), compiled at the first need."""
        if self.forward_kernel is None:
            with self._lock:
                if self.forward_kernel is None:
                    name = self.compute_dtype.name
                    backward = compile_program(self.p, self.bwd_inputs, self.bwd_values, self.bwd_kinds,
                                               name) if self.has_backward else None
                    forward = compile_program(self.p, self.inputs, self.fwd_values, self.fwd_kinds, name)
                    self._precompile(forward, self.inputs, self.fwd_kinds)
                    if backward is not None:
                        self._precompile(backward, self.bwd_inputs, self.bwd_kinds)
                    self.backward_kernel, self.forward_kernel = backward, forward
        return self.forward_kernel, self.backward_kernel

    def cuda_kernels(self, dtype: str = None):
        """The generated CUDA kernels (forward, backward or None) for arrays of ``dtype``
        ("float32" or "float64"; the region's own by default, float16 computing in float32):
        ``cuda_codegen.ElementwiseKernel`` or ``RowKernel`` sources, made once per dtype."""
        from .cuda_codegen import generate
        dtype = dtype or self.compute_dtype.name
        kernels = self._cuda.get(dtype)
        if kernels is None:
            forward = generate(self.p, self.inputs, self.fwd_values, self.fwd_kinds, dtype, self.width)
            backward = generate(self.p, self.bwd_inputs, self.bwd_values, self.bwd_kinds, dtype,
                                self.width) if self.has_backward else None
            kernels = self._cuda[dtype] = (forward, backward)
        return kernels

    @property
    def compute_dtype(self):
        """The dtype the kernels compute in: float16 and bfloat16 regions run in float32 (as
        torch's generated kernels do), their results rounded once at the end."""
        return self._compute

    def _precompile(self, kernel, inputs, out_kinds) -> None:
        """Compile (or load from numba's cache) now, for the arrays the calls will pass, so
        the first call pays nothing and the backend's compile time is the real one."""
        import numba
        dt = self.compute_dtype
        like = {"vec": numpy.empty((1, 1), dt), "col": numpy.empty(1, dt), "row": numpy.empty(1, dt),
                "irow": numpy.empty(1, numpy.int64), "scalar": numpy.empty(1, dt), "csum": numpy.empty((1, 1), dt)}
        args = [0, 1, numpy.empty(2, numpy.int64)] + [like[v.kind] for v in inputs] + [like[k] for k in out_kinds]
        kernel.compile(tuple(numba.typeof(a) for a in args))

    def _build_backward(self, requires_grad):
        p = self.p
        forward = p.ancestors([o.value for o in self.outputs] + self.weights)
        n_forward = len(p.values)
        self.wrt = [v for v, rg in zip(self.inputs, requires_grad) if rg]
        if any(v.kind not in ("vec", "row", "col", "scalar") for v in self.wrt):
            raise NotFusable("a gradient for an integer input")
        adjoints = [p.input("vec" if o.kind == "vec" and o.post is None else "row" if o.post is None else "scalar",
                            f"grad_{k}") for k, o in enumerate(self.outputs)]
        grads = gradients(p, [o.value for o in self.outputs], adjoints, self.wrt, self.width)
        # a scalar's gradient is written one sum per row, and the rows added up after the loop
        self.grad_kinds = [{"vec": "vec", "row": "row", "col": "csum", "scalar": "row"}[v.kind] for v in self.wrt]
        self.zero_grads = [g.op == "const" for g in grads]
        live = [(g, k) for g, k, z in zip(grads, self.grad_kinds, self.zero_grads) if not z]
        self.saved = _saved(p, [g for g, _ in live], forward, n_forward)
        self.bwd_inputs = self.inputs + adjoints + self.saved
        self.bwd_values, self.bwd_kinds = [g for g, _ in live], [k for _, k in live]

    # -- running the kernels ---------------------------------------------------------
    # The call's operands are arrays (numpy or cupy) or Python numbers (scalar inputs).
    def _geometry(self, operands):
        """The row count and the results' shapes for these operands."""
        if not self.dynamic:
            return self.rows, [o.shape for o in self.outputs]
        for v, a in zip(self.inputs, operands):
            if v.kind in ("vec", "irow"):
                shape = tuple(numpy.shape(a))
                lead = shape[:-1] if v.kind == "vec" else shape
                break
        else:
            return self.rows, [o.shape for o in self.outputs]
        rows = 1
        for n in lead:
            rows *= n
        return rows, [o.shape if o.post else lead + o.shape[self.lead_rank:] for o in self.outputs]

    def _backend(self, operands):
        """(array module, dtype the kernels compute in, whether CUDA runs) for these operands."""
        for a in operands:
            if on_cuda(a):
                return cupy_module(), self._compute, True
        return numpy, self._compute, False

    def _prepare(self, values, kinds, R, xp=numpy, dt=None):
        """The operands as the kernels take them: ``[R, C]``, ``[C]``, ``[R]`` or ``[1]``
        arrays of the compute dtype, by ``kinds``."""
        C, dt = self.width, dt if dt is not None else self.np_dtype
        out = []
        for kind, a in zip(kinds, values):
            if kind == "vec":
                a = xp.ascontiguousarray(a, dtype=dt).reshape(R, C)
            elif kind == "col":
                a = xp.ascontiguousarray(a, dtype=dt).reshape(C)
            elif kind == "row":
                a = xp.ascontiguousarray(a, dtype=dt).reshape(R)
            elif kind == "irow":
                a = xp.ascontiguousarray(a, dtype=numpy.int64).reshape(R)
            else:
                a = xp.asarray(a, dtype=dt).reshape(1)
            out.append(a)
        return out

    def _run(self, kernel, arrays, kinds, R, dt, shapes=None):
        """``shapes``: the shape each ``vec`` result is returned in (``[R, C]`` when None); it
        is allocated so, and the kernel writes a ``[R, C]`` view of it, so a gradient leaves
        as an array that owns its memory and becomes ``.grad`` without a copy."""
        C = self.width
        # a region too small to split runs on this thread (no call into OpenBLAS for the count)
        parts = 1 if R * C < _runtime.PARALLEL_MIN_WORK else max(1, min(_runtime.threads(), R))
        bounds = self._bounds.get((R, parts))
        if bounds is None:
            bounds = numpy.array([R * i // parts for i in range(parts + 1)], numpy.int64)
            if not self.dynamic:  # a dynamic region meets many row counts: those are not kept
                self._bounds[(R, parts)] = bounds
        outs, views, sums = [], [], False
        for k, kind in enumerate(kinds):
            if kind == "vec":
                shape = shapes[k] if shapes else None
                o = numpy.empty(shape or (R, C), dt)
                views.append(o if shape is None or shape == (R, C) else o.reshape(R, C))
            else:
                o = numpy.zeros((parts, C), dt) if kind == "csum" else numpy.empty(R, dt)
                sums = sums or kind == "csum"
                views.append(o)
            outs.append(o)
        if parts == 1:
            kernel(0, 1, bounds, *arrays, *views)
        else:
            _runtime.parallel_for(kernel, parts, bounds, *arrays, *views, work_per_item=max(1, R // parts) * C)
        if not sums:
            return outs
        return [(o[0] if parts == 1 else o.sum(axis=0)) if k == "csum" else o for o, k in zip(outs, kinds)]

    def _launch(self, which: int, arrays, kinds, R, cuda: bool, dt, shapes=None):
        """Run the forward (``which`` 0) or backward (1) kernel of the arrays' backend."""
        if cuda:
            from . import cuda_run
            return cuda_run.run(self.cuda_kernels(dt.name)[which], arrays,
                                self._bwd_in_kinds if which else self._in_kinds, kinds, R, self.width, dt)
        return self._run(self._numba()[which], arrays, kinds, R, dt, shapes)

    def _check_targets(self, arrays) -> None:
        if not self.p.target_checks:
            return
        for value, ignore in self.p.target_checks:
            t = arrays[self.inputs.index(value)]
            bad = (t != ignore) & ((t < 0) | (t >= self.width))
            if bad.any():
                raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")

    def forward_arrays(self, operands):
        """The results, and what backward needs besides the operands (the mean's weights,
        the saved values, the geometry). IndexError for a class target outside ``[0, C)``
        that is not ignored."""
        xp, dt, cuda = self._backend(operands)
        rows, shapes = self._geometry(operands)
        inputs = self._prepare(operands, self._in_kinds, rows, xp, dt)
        self._check_targets(inputs)
        arrays = self._launch(0, inputs, self.fwd_kinds, rows, cuda, dt)
        n = len(self.outputs)
        if self._plain and dt is self.np_dtype:  # no loss to finish, no rounding: the arrays as written
            return ([a if a.shape == shape else a.reshape(shape) for a, shape in zip(arrays, shapes)],
                    ((), arrays[n:], rows, shapes))
        weights = iter(arrays[n:n + len(self.weights)])
        results, totals = [], []
        for o, a, shape in zip(self.outputs, arrays, shapes):
            if o.post == "sum":
                a = xp.asarray(a.sum(), dtype=dt)
            elif o.post == "mean":
                totals.append(next(weights).sum() if o.weight is not None else rows * self.width)
                a = xp.asarray(a.sum() / totals[-1], dtype=dt)
            results.append(a.reshape(shape) if a.dtype == self.np_dtype else a.astype(self.np_dtype).reshape(shape))
        return results, (totals, arrays[n + len(self.weights):], rows, shapes)

    def backward_arrays(self, operands, grads, extra):
        """Per operand, its gradient in its own shape and the region's dtype (None for an
        operand that takes none, or whose value reaches only results without a gradient,
        as the engine leaves them), from ``grads``, one array (or None) per result."""
        xp, dt, cuda = self._backend(operands)
        unreached = self._unreached(tuple(g is None for g in grads)) if any(g is None for g in grads) else ()
        totals, saved, rows, shapes = extra
        totals = iter(totals)
        adjoints = []
        for o, g, shape in zip(self.outputs, grads, shapes):
            g = xp.zeros(shape, dt) if g is None else g
            if o.post == "mean":
                g = xp.asarray(g, dt) / next(totals)
            adjoints.append(g)
        arrays = self._prepare(list(operands) + adjoints + list(saved), self._bwd_in_kinds, rows, xp, dt)
        wrt = self._wrt_at
        live = [numpy.shape(operands[k]) for k, zero in wrt.items() if not zero]
        computed = iter(self._launch(1, arrays, self.bwd_kinds, rows, cuda, dt, live) if self.has_backward else [])
        out = []
        for k, a in enumerate(operands):
            zero = wrt.get(k)
            if zero is None or k in unreached:
                if zero is not None and not zero:
                    next(computed)  # computed all the same: the kernel writes every gradient
                out.append(None)
                continue
            g, shape = None if zero else next(computed), numpy.shape(a)
            if g is not None and self.inputs[k].kind == "scalar":  # its per-row sums, added up
                g = g.sum()
            g = xp.zeros(shape, self.np_dtype) if g is None else xp.ascontiguousarray(g)
            if g.dtype != self.np_dtype:  # a float16 or bfloat16 region's gradient, computed in float32
                g = g.astype(self.np_dtype)
            out.append(g if g.shape == shape else g.reshape(shape))
        return out

    def _unreached(self, missing: tuple) -> frozenset:
        """The operand positions whose values reach none of the results that have a
        gradient (``missing``: per result, whether its gradient is None)."""
        found = self._unreached_by.get(missing)
        if found is None:
            live = self.p.ancestors([o.value for o, m in zip(self.outputs, missing) if not m])
            found = self._unreached_by[missing] = frozenset(k for k, v in enumerate(self.inputs) if v.id not in live)
        return found

    def __call__(self, *tensors):
        operands = [t._data if isinstance(t, Tensor) else t for t in tensors]
        results, extra = self.forward_arrays(operands)
        dtype = self.dtype
        outs = tuple([_make(a, dtype) for a in results])
        if self.has_backward and grad_mode.STATE.enabled:
            for t in tensors:
                if isinstance(t, Tensor) and t._requires_grad:
                    record("CompiledFunctionBackward", _Rule(self, extra), tensors,
                           outs if len(outs) > 1 else outs[0], tensors)
                    break
        return outs


def _saved(p: Program, grads, forward: set, n_forward: int) -> list:
    """The forward values the backward reads instead of recomputing: every per-row value
    it needs (one number per row), and the elementwise values that cost a transcendental
    function (an exp or erf per element costs more than writing and reading the array)."""
    saved, seen, stack = {}, set(), list(grads)
    while stack:
        v = stack.pop()
        if v.id in seen:
            continue
        seen.add(v.id)
        if v.id in forward and v.id < n_forward and v.op not in ("input", "const") and (
                v.kind == "row" or (v.kind == "vec" and costly(v))):
            saved[v.id] = v
            continue
        stack.extend(v.args)
    return [saved[i] for i in sorted(saved)]


class _Rule:
    """The gradient rule of one call of a region (torch names its node
    ``CompiledFunctionBackward``): the generated backward kernel on the raw arrays, the
    engine's common path. Asked for a graph of the gradient (``create_graph=True``), it
    gives the same values with a node whose own backward raises torch's error: the
    generated backward has no gradient of its own."""

    __slots__ = ("region", "extra")

    def __init__(self, region, extra):
        self.region, self.extra = region, extra

    def on_arrays(self, grad, *operands):
        return tuple(self.region.backward_arrays(operands, [grad], self.extra))

    def __call__(self, grads, *operands):
        region = self.region
        grads = [grads] if isinstance(grads, Tensor) else list(grads)
        arrays = [None if g is None else g._data for g in grads]
        computed = region.backward_arrays([t._data if isinstance(t, Tensor) else t for t in operands], arrays,
                                          self.extra)
        out = tuple(None if g is None else _make(g, region.dtype) for g in computed)
        if grad_mode.STATE.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in grads + list(operands)):
            made = tuple(g for g in out if g is not None)
            if made:
                record("CompiledFunctionBackwardBackward", _no_double_backward, tuple(grads) + tuple(operands),
                       made if len(made) > 1 else made[0])
        return out


def _no_double_backward(*_):
    raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")
