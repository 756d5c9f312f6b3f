"""Numba source for a row program, compiled through the CPU kernels' runtime.

A program with reductions runs in passes over each row: pass ``k`` computes, element by
element, the values that need the results of ``k`` reductions, and accumulates the
reductions of level ``k + 1``; between passes the per-row values are computed once.
Elementwise values are recomputed in each pass that needs them rather than stored, so a
kernel reads its inputs and writes its outputs and nothing else. Rows are split into
contiguous parts run by ``parallel_for`` (the runtime's own threads, safe to call from
several threads at once); a column accumulation (a parameter's gradient) keeps one row of
partial sums per part, added up by the caller. A row sum of a multiple of a class
target's ``onehot`` (cross-entropy's pick of the target's log-probability, and its
gradient's) is no pass at all: the summand is computed at the target's column alone.

The source is written once per program and dtype to a file in the numba cache folder and
imported from there, so numba's cache serves a second process without compiling.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading

from .program import COSTLY, Program, Value

__all__ = ["compile_program"]

_UNARY = {
    "neg": "(-{0})", "exp": "M.exp({0})", "log": "M.log({0})", "tanh": "M.tanh({0})",
    "sigmoid": "M.sigmoid({0})", "relu": "(Z if {0} < Z else {0})", "erf": "(ONE - erfc_gauss({0})[0])",
    "gelu": "gelu({0})", "gelu_d": "gelu_d({0})",
    "sqrt": "np.sqrt({0})", "rsqrt": "(ONE / np.sqrt({0}))", "recip": "(ONE / {0})", "abs": "abs({0})",
    "sign": "((ONE if {0} > Z else Z) - (ONE if {0} < Z else Z))", "step": "(ONE if {0} > Z else Z)",
}
_BINARY = {"add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})", "div": "({0} / {1})",
           "max2": "max({0}, {1})", "min2": "min({0}, {1})"}
_COMPARE = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}


def _levels(p: Program, given=frozenset()) -> dict[int, int]:
    level: dict[int, int] = {}
    for v in p.values:
        if v.op in ("input", "const") or v.id in given:
            level[v.id] = 0
        elif v.op in ("rsum", "rmax"):
            level[v.id] = level[v.args[0].id] + 1
        else:
            level[v.id] = max((level[a.id] for a in v.args), default=0)
    return level


class _Source:
    def __init__(self, p: Program, inputs: list[Value], outputs: list[Value], out_kinds: list[str], dtype: str):
        self.p, self.inputs, self.outputs, self.dtype = p, inputs, outputs, dtype
        self.out_kinds = out_kinds  # the array each output is written to: "vec" [R, C], "row" [R], "csum" [parts, C]
        self.slot = {v.id: k for k, v in enumerate(inputs)}  # inputs, and values given by an earlier kernel
        self.level = _levels(p, frozenset(self.slot))
        self.lines: list[str] = []
        self.stored: set[int] = set()  # values kept in a row buffer for later passes (read as b<id>[c])

    def ref(self, v: Value, in_loop: bool) -> str:
        if v.id in self.stored and in_loop:
            return f"b{v.id}[c]"
        if v.op == "const":
            c = v.attr
            return "np.inf" if c == float("inf") else "-np.inf" if c == float("-inf") else f"F({c!r})"
        if v.id in self.slot:
            k = self.slot[v.id]
            if v.kind == "vec":
                return f"x{k}[c]"  # the row view taken at the row's start
            if v.kind == "col":
                return f"a{k}[c]"
            if v.kind in ("row", "irow"):
                return f"a{k}[r]"
            return f"s{k}"
        return f"t{v.id}"

    def expr(self, v: Value) -> str:
        a = [self.ref(x, True) for x in v.args]
        if v.op in _UNARY:
            return _UNARY[v.op].format(*a)
        if v.op in _BINARY:
            return _BINARY[v.op].format(*a)
        if v.op in _COMPARE:
            return f"(ONE if {a[0]} {_COMPARE[v.op]} {a[1]} else Z)"
        if v.op == "powc":
            return f"({a[0]} ** F({v.attr!r}))"
        if v.op == "onehot":
            return f"(ONE if c == {a[0]} else Z)"
        if v.op == "where":
            return f"({a[1]} if {a[0]} != Z else {a[2]})"
        raise NotImplementedError(v.op)

    def deps(self, roots, stop_rows=True, stop=frozenset()):
        """The non-input values ``roots`` need, in topological order (row values are
        taken as computed when ``stop_rows``; values in ``stop`` as stored)."""
        seen, order = set(), []

        def visit(v):
            if v.id in seen or v.op in ("input", "const") or v.id in self.slot:
                return
            seen.add(v.id)
            if v.id in stop and v not in roots_set:
                return
            if stop_rows and v.kind in ("row", "scalar") and v not in roots_set:
                return
            for a in v.args:
                visit(a)
            order.append(v)

        roots_set = set(roots)
        for r in roots:
            visit(r)
        return sorted(order, key=lambda v: v.id)

    def schedule(self):
        """The passes ``build`` writes: the reductions accumulated in them, the per-row
        values computed between them, the element-wise roots of each pass's loop, the
        number of passes, and the row sums of a multiple of a onehot, read at the target's
        column instead of accumulated ({id: that onehot})."""
        level = self.level
        every = self.deps(self.outputs, stop_rows=False)
        self._needed = {v.id for v in every}
        picks = {v.id: f for v in every if v.op == "rsum"
                 and (f := self._onehot_factor(v.args[0])) is not None}
        reductions = [v for v in every if v.op in ("rsum", "rmax") and v.id not in picks]
        row_values = [v for v in every if v.kind in ("row", "scalar") and v.op not in ("rsum", "rmax")]
        roots_by_pass: dict[int, list] = {}
        for v in reductions:
            roots_by_pass.setdefault(level[v.args[0].id], []).append(v.args[0])
        for v, kind in zip(self.outputs, self.out_kinds):
            if kind == "csum":
                src = v.args[0] if v.op == "csum" else v
                roots_by_pass.setdefault(level[src.id], []).append(src)
            elif kind == "vec":
                roots_by_pass.setdefault(level[v.id], []).append(v)
        last = max([*roots_by_pass, *(level[v.args[0].id] for v in every if v.id in picks)], default=-1)
        return reductions, row_values, roots_by_pass, last + 1, picks

    def build(self, name: str) -> str:
        level = self.level
        reductions, row_values, vec_roots_by_pass, passes, picks = self.schedule()
        picked = [v for v in self.p.values if v.id in picks]
        args = ", ".join(f"a{k}" for k in range(len(self.inputs)))
        outs = ", ".join(f"o{k}" for k in range(len(self.outputs)))
        L = self.lines
        L.append(f"def {name}(p0, p1, bounds, {args}{', ' if args else ''}{outs}):")
        L.append(f"    F = np.{self.dtype}")
        L.append("    Z = F(0.0)")
        L.append("    ONE = F(1.0)")
        for k, v in enumerate(self.inputs):
            if v.kind == "scalar":
                L.append(f"    s{k} = a{k}[0]")
        L.append("    C = " + self._width())
        L.append("    for part in range(p0, p1):")
        L += [f"        q{j} = o{j}[part]" for j, kind in enumerate(self.out_kinds) if kind == "csum"]
        L.append("        for r in range(bounds[part], bounds[part + 1]):")
        ind = " " * 12
        # rows as 1-d views indexed from 0: SIMD loads and stores, no wrap-around checks
        L += [f"{ind}x{k} = a{k}[r]" for k, v in enumerate(self.inputs) if v.kind == "vec"]
        L += [f"{ind}w{j} = o{j}[r]" for j, kind in enumerate(self.out_kinds) if kind == "vec"]
        done: set[int] = set()

        def emit_rows(upto):
            for v in row_values:
                if v.id not in done and level[v.id] <= upto:
                    done.add(v.id)
                    L.append(f"{ind}t{v.id} = {self.expr(v)}")

        stores = self._plan_stores(vec_roots_by_pass, passes)
        if self.stored:
            at = next(i for i, line in enumerate(L) if line.startswith("    for part"))
            L.insert(at, "    " + "; ".join(f"b{i} = np.empty(C, F)" for i in sorted(self.stored)))
        for k in range(passes):
            emit_rows(k)
            accs = [v for v in reductions if level[v.args[0].id] == k]
            for v in accs:
                L.append(f"{ind}t{v.id} = {'Z' if v.op == 'rsum' else 'F(-np.inf)'}")
            loop = []
            body = self.deps(vec_roots_by_pass.get(k, []), stop=self._stored_before(stores, k))
            for v in body:
                if v.kind in ("row", "scalar"):
                    continue
                loop.append(f"{ind}    t{v.id} = {self._expr_now(v, stores, k)}")
                if stores.get(v.id) == k:
                    loop.append(f"{ind}    b{v.id}[c] = t{v.id}")
            for v in accs:
                if v.op == "rsum":
                    loop.append(f"{ind}    t{v.id} += {self.ref(v.args[0], True)}")
            for j, (v, kind) in enumerate(zip(self.outputs, self.out_kinds)):
                if kind == "csum":
                    src = v.args[0] if v.op == "csum" else v
                    if level[src.id] == k:
                        loop.append(f"{ind}    q{j}[c] += {self.ref(src, True)}")
                elif kind == "vec" and level[v.id] == k:
                    loop.append(f"{ind}    w{j}[c] = {self.ref(v, True)}")
            if loop:  # a pass whose only reduction was picked has nothing left to loop over
                L.append(f"{ind}for c in range(C):")
                L += loop
            for v in picked:
                if level[v.args[0].id] == k:
                    self._emit_pick(v, picks[v.id], stores, k, ind)
                    done.add(v.id)
            maxes = [v for v in accs if v.op == "rmax"]
            if maxes:  # a max in the loop above would keep it from vectorizing: its own loop over stored values
                L.append(f"{ind}for c in range(C):")
                for v in maxes:
                    L.append(f"{ind}    t{v.id} = max(t{v.id}, {self._ref_stored(v.args[0])})")
            done.update(v.id for v in accs)
        emit_rows(passes + 1)
        for j, (v, kind) in enumerate(zip(self.outputs, self.out_kinds)):
            if kind == "row":
                L.append(f"{ind}o{j}[r] = {self.ref(v, False)}")
        return "\n".join(L) + "\n"

    def _onehot_factor(self, v: Value):
        """The ``onehot`` that ``v`` is a multiple of (a factor of a product, the numerator of
        a quotient, under negations), so that ``v`` is zero at every column but the
        target's; None when there is none."""
        if v.id in self.slot or v.kind != "vec":
            return None
        if v.op == "onehot":
            return v
        if v.op == "mul":
            return self._onehot_factor(v.args[0]) or self._onehot_factor(v.args[1])
        if v.op in ("neg", "div"):
            return self._onehot_factor(v.args[0])
        return None

    def _emit_pick(self, v: Value, onehot: Value, stores, k: int, ind: str) -> None:
        """The row sum ``v`` of a multiple of ``onehot``, after pass ``k``: its summand at the
        target's column alone (zero for a target outside ``[0, C)``, an ignored one), as
        torch's nll_loss reads only that column: no pass over the row, and a non-finite
        value at another column cannot turn the sum into NaN."""
        L, summand = self.lines, v.args[0]
        stop = self._stored_before(stores, k + 1)
        L.append(f"{ind}c = {self.ref(onehot.args[0], False)}")
        L.append(f"{ind}if 0 <= c < C:")
        for u in self.deps([summand], stop=stop):
            if u.kind not in ("row", "scalar"):
                L.append(f"{ind}    t{u.id} = {self._expr_now(u, stores, k + 1)}")
        L.append(f"{ind}    t{v.id} = " + (f"b{summand.id}[c]" if summand.id in stop else f"t{summand.id}"))
        L.append(f"{ind}else:")
        L.append(f"{ind}    t{v.id} = Z")

    def _ref_stored(self, v) -> str:
        return f"b{v.id}[c]" if v.id in self.stored else self.ref(v, True)

    def _stored_before(self, stores, k):
        return frozenset(i for i, at in stores.items() if at < k)

    def _expr_now(self, v, stores, k) -> str:
        """``v``'s expression in pass ``k``: its operands stored in an earlier pass are read
        from their buffers, the ones computed in this pass from their temporaries."""
        saved = self.stored
        self.stored = self._stored_before(stores, k)
        try:
            return self.expr(v)
        finally:
            self.stored = saved

    def _plan_stores(self, roots_by_pass, passes) -> dict[int, int]:
        """Which costly elementwise values to compute once and keep in a row buffer for
        the passes after the one that computes them (value id -> that pass)."""
        stores: dict[int, int] = {}
        for v in self.p.values:  # what a max reduces is kept (the max runs as a loop of its own)
            if v.op == "rmax" and v.args[0].id not in self.slot and v.id in self._needed:
                stores[v.args[0].id] = self.level[v.args[0].id]
        for k in range(passes):
            body = [v for v in self.deps(roots_by_pass.get(k, []), stop=self._stored_before(stores, k))
                    if v.kind not in ("row", "scalar")]
            for v in reversed(body):
                if not self._costly(v):
                    continue
                stop = frozenset(stores) | {v.id}
                later = set()
                for j in range(k + 1, passes):
                    later |= {u.id for u in self.deps(roots_by_pass.get(j, []), stop=stop - {v.id})}
                if v.id in later:
                    stores[v.id] = k
        self.stored = set(stores)
        return stores

    def _costly(self, v) -> bool:
        if v.op in COSTLY:
            return True
        return any(a.op not in ("input", "const") and a.id not in self.slot and a.kind == "vec" and self._costly(a)
                   for a in v.args)

    def _width(self) -> str:
        for k, v in enumerate(self.inputs):
            if v.kind == "vec":
                return f"a{k}.shape[1]"
            if v.kind == "col":
                return f"a{k}.shape[0]"
        for k, kind in enumerate(self.out_kinds):
            if kind in ("vec", "csum"):
                return f"o{k}.shape[1]"
        return "0"


_LOCK = threading.Lock()
_LOADED: dict[str, object] = {}


def compile_program(p: Program, inputs: list[Value], outputs: list[Value], out_kinds: list[str], dtype: str):
    """The jitted kernel ``kernel(p0, p1, bounds, *input_arrays, *output_arrays)``: parts
    ``p0..p1`` of the rows split at ``bounds``; ``out_kinds`` says each output's array."""
    src = _Source(p, inputs, outputs, out_kinds, dtype)
    body = src.build("kernel")
    fastmath = "{'reassoc', 'nsz', 'contract'}"
    text = ("import numpy as np\n"
            "from ember.cpu.kernels import _math as M\n"
            "from ember.cpu.kernels.activation import _erfc_gauss as erfc_gauss\n"
            "from ember.cpu.kernels.activation import _gelu as gelu, _gelu_d as gelu_d\n"
            "from ember.cpu.kernels._runtime import jit\n\n\n"
            f"@jit(fastmath={fastmath})\n" + body)
    digest = hashlib.sha256(text.encode()).hexdigest()[:20]
    with _LOCK:
        kernel = _LOADED.get(digest)
        if kernel is None:
            kernel = _LOADED[digest] = _load(text, digest).kernel
    return kernel


def _load(text: str, digest: str):
    from ...cpu.kernels._runtime import cache_dir
    folder = os.path.join(cache_dir(), "generated")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"fused_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # whole or absent, for a process reading it at the same time
    name = f"ember_fused_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
