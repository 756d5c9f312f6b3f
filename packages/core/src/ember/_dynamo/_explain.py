"""``explain(fn)(*args)``: what compiling ``fn`` records for these arguments
(torch._dynamo.explain): the graphs, the graph breaks with the line of user code that
caused each, the recompiles with the guard that failed, and why a call runs eagerly."""

from __future__ import annotations

import dataclasses
import operator

__all__ = ["explain", "ExplainOutput", "GraphCompileReason"]


@dataclasses.dataclass
class GraphCompileReason:
    """One graph break: what needed a concrete value, and where (``file:line in function``)."""
    reason: str
    user_stack: list
    graph_break: bool = True


@dataclasses.dataclass
class ExplainOutput:
    """What ``explain`` found (torch._dynamo.backends.debugging.ExplainOutput's fields):
    ``graphs`` (the recorded ``ember.fx.GraphModule`` s) and ``graph_count``;
    ``graph_break_count`` and ``break_reasons`` (``GraphCompileReason`` s, with the user line);
    ``op_count`` and ``ops_per_graph`` (each graph's call targets); ``out_guards`` (None:
    ember's guards are not listed as torch's guard objects); ``compile_times`` (seconds per
    recording, as text); ``recompile_reasons`` (the failed guard of each recompile, in words)
    and ``eager_reasons`` (why a signature runs eagerly, ember's addition)."""

    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list | None = None
    out_guards: list | None = None
    compile_times: str | None = None
    recompile_reasons: list = dataclasses.field(default_factory=list)
    eager_reasons: list = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for k, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {k}:", f"    Reason: {r.reason}", "    User Stack:"]
            lines += [f"      {frame}" for frame in r.user_stack]
        if self.ops_per_graph is not None:
            lines.append("Ops per Graph:")
            for k, ops in enumerate(self.ops_per_graph, 1):
                lines.append(f"  Ops {k}:")
                lines += [f"    {op}" for op in ops]
        if self.recompile_reasons:
            lines.append("Recompile Reasons:")
            lines += [f"  {r}" for r in self.recompile_reasons]
        if self.eager_reasons:
            lines.append("Run Eagerly Because:")
            lines += [f"  {r}" for r in self.eager_reasons]
        if self.compile_times is not None:
            lines.append(f"Compile Times: {self.compile_times}")
        return "\n".join(lines) + "\n"


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` compiles ``f`` (a function, a module or an
    ``ember.compile`` result) afresh with the ``eager`` backend, calls it once with the
    arguments and returns an ``ExplainOutput``: its graphs, graph breaks (with the user's
    line), and the recompiles with the guard that failed (for an ``ember.compile`` result,
    those of its calls so far too). ``explain(f, *args)``, torch's older form, does the
    same."""
    def inner(*args, **kwargs):
        from ..compiler import _compiled
        from ..compiler.backends import eager
        from ..nn.modules.module import Module
        if isinstance(f, Module):
            fn, owner = f._call_impl, f
        else:
            fn = getattr(getattr(f, "_ember_compiled", None), "fn", f)
            owner = getattr(fn, "__self__", None)
        compiled = _compiled.CompiledFunction(fn, eager, "eager", module=owner if isinstance(owner, Module) else None)
        compiled(*args, **kwargs)
        out = _summarize(compiled.log)
        history = getattr(getattr(f, "_ember_compiled", None), "log", None) or getattr(
            getattr(f, "__dict__", {}).get("_compiled"), "log", None) or []
        out.recompile_reasons = [e[1] for e in history if e[0] == "recompile"] + out.recompile_reasons
        return out

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner


def _summarize(log) -> ExplainOutput:
    graphs, breaks, recompiles, eager, times = [], [], [], [], []
    for event in log:
        kind = event[0]
        if kind == "graphs":
            graphs += [segment.gm for segment in event[1]]
            times.append(event[2])
        elif kind == "break":
            breaks.append(GraphCompileReason(event[1], [event[2]] if event[2] else []))
        elif kind == "recompile":
            recompiles.append(event[1])
        elif kind == "eager":
            eager.append(event[1])
    ops = [[n.target for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
           for gm in graphs]
    return ExplainOutput(graphs=graphs, graph_count=len(graphs), graph_break_count=len(breaks),
                         break_reasons=breaks, op_count=sum(len(o) for o in ops), ops_per_graph=ops,
                         out_guards=None,
                         compile_times=", ".join(f"{t:.4f} s" for t in times) if times else None,
                         recompile_reasons=recompiles, eager_reasons=eager)
