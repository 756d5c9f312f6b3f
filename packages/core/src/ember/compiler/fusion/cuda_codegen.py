"""CUDA source for a row program: the cupy counterpart of ``codegen`` (numba), generated
from the same program, with the same schedule. Text only: nothing here imports cupy, so
the sources can be written and compiled (NVRTC) on a machine without a GPU.

Two shapes of kernel:

- **Element-wise** (no reduction, every output a ``vec``): the body of a
  ``cupy.ElementwiseKernel``. Each input is one parameter that cupy broadcasts against the
  ``[R, C]`` output: a ``vec`` as ``[R, C]``, a ``row`` (and an ``irow``) as ``[R, 1]``, a
  ``col`` as ``[C]``, a ``scalar`` as a 0-d array. cupy's loop hands the body the element
  references of every parameter (``a<k>``, ``o<j>``) and the flat index ``i``; the body
  computes the values in topological order and assigns the outputs.
- **Per row** (everything else): one ``extern "C"`` kernel (``cupy.RawModule``) in which a
  block walks its rows (``r = blockIdx.x; r < rows; r += gridDim.x``). As in ``codegen``,
  pass ``k`` computes, element by element (``c = threadIdx.x; c < C; c += blockDim.x``), the
  values that need ``k`` reductions and accumulates the reductions of level ``k + 1``; a
  block-wide reduction (``_common.PRELUDE``) then hands every thread the per-row result,
  and the per-row values are computed once per thread. A costly element-wise value used
  again in a later pass is kept in a row buffer in shared memory (each thread reads back
  only the columns it wrote, so no extra synchronisation) when the buffers fit
  ``SHARED_LIMIT`` bytes, and recomputed otherwise. A column sum (a parameter's gradient)
  accumulates into the block's own row of a ``[blocks, C]`` array of partial sums: a
  thread owns its columns for every row the block visits, so no atomics, and the caller
  adds the partial rows up (deterministic). A row sum of a multiple of a class target's
  ``onehot`` (cross-entropy's pick) is evaluated by every thread at the target's column
  alone, after a barrier when it reads a row buffer (another thread wrote that column).

Arrays are C-contiguous: a ``vec`` is ``[R, C]``, a ``row`` ``[R]``, a ``col`` ``[C]``, an
``irow`` ``[R]`` of int64, a ``scalar`` ``[1]``. The element type is the region's float
dtype (``float`` or ``double``; float16 regions are run in float32 by the caller), which
is also the accumulation type, as in torch's CUDA kernels for those dtypes.
Launch of a per-row kernel: grid ``(blocks,)`` with ``blocks <= rows``, block a multiple
of 32 up to 1024, dynamic shared memory ``RowKernel.shared_bytes``, arguments
``(*inputs, *outputs, rows)`` with ``rows`` a 64-bit integer.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from ...cuda.kernels._common import PRELUDE
from .codegen import _Source
from .program import Program, Value

__all__ = ["CTYPES", "SHARED_LIMIT", "HELPERS", "ElementwiseKernel", "RowKernel", "generate", "elementwise_fits",
           "elementwise", "row_kernel"]

CTYPES = {"float32": "float", "float64": "double"}
SHARED_LIMIT = 48 * 1024  # what every device gives a block without opting in to more

# device functions the generated expressions call, for both element types
HELPERS = r"""
__device__ __forceinline__ float fused_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double fused_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
template <typename T> __device__ __forceinline__ T fused_sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
// max and min that keep a NaN, as torch's maximum and minimum do
template <typename T> __device__ __forceinline__ T fused_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T fused_min(T a, T b) { return (a < b || a != a) ? a : b; }
"""

_UNARY = {
    "neg": "(-{0})", "exp": "exp({0})", "log": "log({0})", "tanh": "tanh({0})", "sigmoid": "fused_sigmoid({0})",
    "relu": "({0} < {Z} ? {Z} : {0})", "erf": "erf({0})", "sqrt": "sqrt({0})", "rsqrt": "({O} / sqrt({0}))",
    "recip": "({O} / {0})", "abs": "fabs({0})", "sign": "{T}(({0} > {Z}) - ({0} < {Z}))",
    "step": "({0} > {Z} ? {O} : {Z})",
    "gelu": "({0} * {T}(0.5) * erfc({0} * {T}(-0.7071067811865476)))",
    "gelu_d": ("({T}(0.5) * erfc({0} * {T}(-0.7071067811865476))"
               " + {0} * {T}(0.3989422804014327) * exp({T}(-0.5) * {0} * {0}))"),
}
_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
           "max2": "fused_max({0}, {1})", "min2": "fused_min({0}, {1})"}
_COMPARE = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}


class ElementwiseKernel(NamedTuple):
    """The arguments of ``cupy.ElementwiseKernel(in_params, out_params, operation, name,
    preamble=preamble)``; ``needs_cols``: the last input parameter is ``int64 _cols`` (the row
    width, for a value that depends on the column: ``c = i % _cols``)."""
    in_params: str
    out_params: str
    operation: str
    name: str
    preamble: str
    needs_cols: bool


class RowKernel(NamedTuple):
    """One translation unit defining ``extern "C" __global__ void <name>``; ``shared_bytes``
    is the dynamic shared memory a block needs (its row buffers), ``column_sums`` whether
    some output is a ``[blocks, C]`` array of partial column sums."""
    source: str
    name: str
    shared_bytes: int
    column_sums: bool


def _literal(c: float, t: str) -> str:
    if c != c:
        return f"{t}(fused_inf({t}(0)) - fused_inf({t}(0)))"
    if c in (float("inf"), float("-inf")):
        return f"{'-' if c < 0 else ''}fused_inf({t}(0))"
    return f"{t}({c!r})"


def _expression(v: Value, a: list, t: str, column: str) -> str:
    """``v``'s C++ expression from its operands' expressions ``a``, in element type ``t``;
    ``column`` is the element's column index (for ``onehot``)."""
    zero, one = f"{t}(0)", f"{t}(1)"
    if v.op in _UNARY:
        return _UNARY[v.op].format(*a, Z=zero, O=one, T=t)
    if v.op in _BINARY:
        return _BINARY[v.op].format(*a)
    if v.op in _COMPARE:
        return f"({a[0]} {_COMPARE[v.op]} {a[1]} ? {one} : {zero})"
    if v.op == "powc":
        return f"pow({a[0]}, {t}({v.attr!r}))"
    if v.op == "onehot":
        return f"({column} == (long long)({a[0]}) ? {one} : {zero})"
    if v.op == "where":
        return f"({a[0]} != {zero} ? {a[1]} : {a[2]})"
    raise NotImplementedError(v.op)


def _name(kind: str, text: str) -> str:
    return f"fused_{kind}_{hashlib.sha256(text.encode()).hexdigest()[:16]}"


# -- element-wise --------------------------------------------------------------------------

def elementwise_fits(p: Program, outputs: list[Value], out_kinds: list[str]) -> bool:
    """Whether an ``ElementwiseKernel`` computes these outputs: no reduction among the
    values they need, and every output written as a ``vec``."""
    if any(k != "vec" for k in out_kinds):
        return False
    needed = p.ancestors(outputs)
    return not any(p.values[i].op in ("rsum", "rmax", "csum") for i in needed)


def elementwise(p: Program, inputs: list[Value], outputs: list[Value], dtype: str) -> ElementwiseKernel:
    """The ElementwiseKernel computing ``outputs`` (``vec`` values) from ``inputs``."""
    t = CTYPES[dtype]
    slot = {v.id: k for k, v in enumerate(inputs)}
    needed = p.ancestors(outputs)
    lines, cols = [], False

    def ref(v: Value) -> str:
        if v.id in slot:
            k = slot[v.id]
            return f"a{k}" if v.kind != "irow" else f"(long long)a{k}"
        if v.op == "const":
            return _literal(v.attr, t)
        return f"t{v.id}"

    for v in p.values:
        if v.id not in needed or v.id in slot or v.op in ("input", "const"):
            continue
        if v.op == "onehot":
            cols = True
        lines.append(f"const {t} t{v.id} = {_expression(v, [ref(a) for a in v.args], t, 'c')};")
    if cols:
        lines.insert(0, "const long long c = i % _cols;")
    lines += [f"o{j} = {ref(v)};" for j, v in enumerate(outputs)]
    in_params = [f"{'int64' if v.kind == 'irow' else dtype} a{k}" for k, v in enumerate(inputs)]
    if cols:
        in_params.append("int64 _cols")
    operation = "\n".join(lines)
    params = ", ".join(in_params), ", ".join(f"{dtype} o{j}" for j in range(len(outputs)))
    return ElementwiseKernel(params[0], params[1], operation, _name("elementwise", "|".join(params) + operation),
                             HELPERS, cols)


# -- one block per row ---------------------------------------------------------------------

class _RowSource(_Source):
    """``codegen``'s schedule (levels, passes, dependencies, stored values) written as CUDA."""

    def __init__(self, p, inputs, outputs, out_kinds, dtype, width, shared_limit):
        super().__init__(p, inputs, outputs, out_kinds, dtype)
        self.t, self.width, self.shared_limit = CTYPES[dtype], int(width), shared_limit
        self.itemsize = 4 if dtype == "float32" else 8

    def ref(self, v: Value, in_loop: bool) -> str:
        if v.id in self.stored and in_loop:
            return f"b{v.id}[c]"
        if v.op == "const":
            return _literal(v.attr, self.t)
        if v.id in self.slot:
            k = self.slot[v.id]
            return {"vec": f"x{k}[c]", "col": f"a{k}[c]", "row": f"a{k}[r]", "irow": f"a{k}[r]"}.get(v.kind, f"s{k}")
        return f"t{v.id}"

    def expr(self, v: Value) -> str:
        return _expression(v, [self.ref(x, True) for x in v.args], self.t, "c")

    def _plan_stores(self, roots_by_pass, passes) -> dict[int, int]:
        """The costly element-wise values a later pass would recompute, kept from the pass
        that computes them (value id -> that pass), as many as the shared memory holds."""
        stores: dict[int, int] = {}
        budget = self.shared_limit // (self.width * self.itemsize)
        for k in range(passes):
            body = [v for v in self.deps(roots_by_pass.get(k, []), stop=self._stored_before(stores, k))
                    if v.kind not in ("row", "scalar")]
            for v in reversed(body):
                if len(stores) >= budget or not self._costly(v):
                    continue
                stop = frozenset(stores) | {v.id}
                later = set()
                for j in range(k + 1, passes):
                    later |= {u.id for u in self.deps(roots_by_pass.get(j, []), stop=stop - {v.id})}
                if v.id in later:
                    stores[v.id] = k
        self.stored = set(stores)
        return stores

    def build(self, name: str) -> str:
        t, level = self.t, self.level
        reductions, row_values, roots_by_pass, passes, picks = self.schedule()
        picked = [v for v in self.p.values if v.id in picks]
        stores = self._plan_stores(roots_by_pass, passes)

        def pointer(k, v):
            return f"const long long* __restrict__ a{k}" if v.kind == "irow" else f"const {t}* __restrict__ a{k}"
        params = [pointer(k, v) for k, v in enumerate(self.inputs)]
        params += [f"{t}* __restrict__ o{j}" for j in range(len(self.outputs))]
        L = self.lines = [f'extern "C" __global__ void {name}({", ".join(params + ["long long rows"])}) {{',
             f"  const long long C = {self.width};",
             f"  __shared__ {t} reduce_slots[32];"]
        if self.stored:
            L.append(f"  extern __shared__ {t} row_buffers[];")
            L += [f"  {t}* b{i} = row_buffers + {n} * C;" for n, i in enumerate(sorted(self.stored))]
        L += [f"  const {t} s{k} = a{k}[0];" for k, v in enumerate(self.inputs) if v.kind == "scalar"]
        L += [f"  {t}* q{j} = o{j} + (long long)blockIdx.x * C;"
              for j, kind in enumerate(self.out_kinds) if kind == "csum"]
        L.append("  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {")
        ind = "    "
        L += [f"{ind}const {t}* x{k} = a{k} + r * C;" for k, v in enumerate(self.inputs) if v.kind == "vec"]
        L += [f"{ind}{t}* w{j} = o{j} + r * C;" for j, kind in enumerate(self.out_kinds) if kind == "vec"]
        done: set[int] = set()

        def emit_rows(upto):
            for v in row_values:
                if v.id not in done and level[v.id] <= upto:
                    done.add(v.id)
                    L.append(f"{ind}const {t} t{v.id} = {self.expr(v)};")

        for k in range(passes):
            emit_rows(k)
            accs = [v for v in reductions if level[v.args[0].id] == k]
            for v in accs:
                L.append(f"{ind}{t} t{v.id} = {t}(0);" if v.op == "rsum" else f"{ind}{t} t{v.id} = -fused_inf({t}(0));")
            loop = []
            for v in self.deps(roots_by_pass.get(k, []), stop=self._stored_before(stores, k)):
                if v.kind in ("row", "scalar"):
                    continue
                loop.append(f"{ind}  const {t} t{v.id} = {self._expr_now(v, stores, k)};")
                if stores.get(v.id) == k:
                    loop.append(f"{ind}  b{v.id}[c] = t{v.id};")
            for v in accs:
                operand = self._ref_now(v.args[0], stores, k)
                loop.append(f"{ind}  t{v.id} += {operand};" if v.op == "rsum" else
                            f"{ind}  t{v.id} = nan_max(t{v.id}, {operand});")
            for j, (v, kind) in enumerate(zip(self.outputs, self.out_kinds)):
                if kind == "csum":
                    src = v.args[0] if v.op == "csum" else v
                    if level[src.id] == k:
                        loop.append(f"{ind}  q{j}[c] += {self._ref_now(src, stores, k)};")
                elif kind == "vec" and level[v.id] == k:
                    loop.append(f"{ind}  w{j}[c] = {self._ref_now(v, stores, k)};")
            if loop:  # a pass whose only row sum was picked has nothing left to loop over
                L.append(f"{ind}for (long long c = threadIdx.x; c < C; c += blockDim.x) {{")
                L += loop
                L.append(f"{ind}}}")
            for v in accs:  # every thread gets the row's result (the block's threads all reach here)
                identity = f"{t}(0)" if v.op == "rsum" else f"-fused_inf({t}(0))"
                L.append(f"{ind}t{v.id} = block_reduce<{t}, {'false' if v.op == 'rsum' else 'true'}>"
                         f"(t{v.id}, reduce_slots, {identity});")
            for v in picked:
                if level[v.args[0].id] == k:
                    self._emit_pick(v, picks[v.id], stores, k, ind)
                    done.add(v.id)
            done.update(v.id for v in accs)
        emit_rows(passes + 1)
        rows_out = [(j, v) for j, (v, kind) in enumerate(zip(self.outputs, self.out_kinds)) if kind == "row"]
        if rows_out:
            L.append(f"{ind}if (threadIdx.x == 0) {{")
            L += [f"{ind}  o{j}[r] = {self.ref(v, False)};" for j, v in rows_out]
            L.append(f"{ind}}}")
        L += ["  }", "}"]
        return "\n".join(L) + "\n"

    def _emit_pick(self, v: Value, onehot: Value, stores, k: int, ind: str) -> None:
        """The row sum ``v`` of a multiple of ``onehot``, after pass ``k``: every thread
        evaluates its summand at the target's column alone (zero for a target outside
        ``[0, C)``, an ignored one), as ``codegen`` does; a summand read from a row buffer
        waits for the block's writes to it."""
        t, L, summand = self.t, self.lines, v.args[0]
        stop = self._stored_before(stores, k + 1)
        body = [u for u in self.deps([summand], stop=stop) if u.kind not in ("row", "scalar")]
        reads = {a.id for u in body for a in u.args} | {summand.id}
        if reads & stop:
            L.append(f"{ind}__syncthreads();")
        L.append(f"{ind}{t} t{v.id} = {t}(0);")
        L.append(f"{ind}{{")
        L.append(f"{ind}  const long long c = (long long)({self.ref(onehot.args[0], False)});")
        L.append(f"{ind}  if (0 <= c && c < C) {{")
        for u in body:
            L.append(f"{ind}    const {t} t{u.id} = {self._expr_now(u, stores, k + 1)};")
        L.append(f"{ind}    t{v.id} = " + (f"b{summand.id}[c];" if summand.id in stop else f"t{summand.id};"))
        L.append(f"{ind}  }}")
        L.append(f"{ind}}}")

    def _ref_now(self, v, stores, k) -> str:
        """How pass ``k`` reads ``v``: a temporary computed in this pass, or its buffer."""
        if v.id in stores and stores[v.id] < k:
            return f"b{v.id}[c]"
        saved = self.stored
        self.stored = set()
        try:
            return self.ref(v, True)
        finally:
            self.stored = saved


def row_kernel(p: Program, inputs: list[Value], outputs: list[Value], out_kinds: list[str], dtype: str, width: int,
               shared_limit: int = SHARED_LIMIT) -> RowKernel:
    """The per-row kernel writing ``outputs`` as ``out_kinds`` ("vec" ``[R, C]``, "row"
    ``[R]``, "csum" ``[blocks, C]`` partial sums) from ``inputs``, rows of ``width``."""
    src = _RowSource(p, inputs, outputs, out_kinds, dtype, width, shared_limit)
    body = src.build("KERNEL_NAME")
    name = _name("rows", body)
    text = PRELUDE + HELPERS + body.replace("KERNEL_NAME", name)
    return RowKernel(text, name, len(src.stored) * int(width) * src.itemsize, "csum" in out_kinds)


def generate(p: Program, inputs: list[Value], outputs: list[Value], out_kinds: list[str], dtype: str, width: int):
    """The kernel for these outputs: an ElementwiseKernel where one fits, else a RowKernel."""
    if elementwise_fits(p, outputs, out_kinds):
        return elementwise(p, inputs, outputs, dtype)
    return row_kernel(p, inputs, outputs, out_kinds, dtype, width)

