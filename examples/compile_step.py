"""A training step compiled with ember.compile: what the compiler captured, and what it buys.

    python examples/compile_step.py                 # [4096, 1000] rows, 20 steps each way
    python examples/compile_step.py --rows 512 --steps 5

The step is layer_norm -> affine -> GELU -> cross-entropy with its backward, the kind of
elementwise-bound work that eager execution runs as one pass per op. ``ember.compile``
records the step once, then replays the recording; its default backend turns the whole
chain into one generated loop forward and one backward. The script prints the captured
graph (``ember._dynamo.explain``), checks that compiled and eager agree, and times both.
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.nn.functional as F


def make_step(rows: int, cols: int):
    ember.manual_seed(0)
    x = ember.randn(rows, cols, requires_grad=True)
    target = ember.randint(0, cols, (rows,))
    ln_w, ln_b = ember.ones(cols, requires_grad=True), ember.zeros(cols, requires_grad=True)
    w, b = ember.ones(cols, requires_grad=True), ember.zeros(cols, requires_grad=True)
    leaves = (x, ln_w, ln_b, w, b)

    def step(x, target):
        h = F.layer_norm(x, (cols,), ln_w, ln_b)
        loss = F.cross_entropy(F.gelu(h * w + b), target)
        loss.backward()
        return loss

    return step, x, target, leaves


def timed(fn, steps: int, leaves) -> float:
    best = float("inf")
    for _ in range(steps):
        for t in leaves:
            t.grad = None
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=4096)
    p.add_argument("--cols", type=int, default=1000)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    step, x, target, leaves = make_step(args.rows, args.cols)

    report = ember._dynamo.explain(step)(x, target)
    print(f"captured {report.graph_count} graph(s), {report.graph_break_count} graph break(s), "
          f"{report.op_count} ops")
    print(report.graphs[0].code.strip())

    compiled = ember.compile(step)
    start = time.perf_counter()
    compiled(x, target)  # runs eagerly while recording, then generates and compiles the fused kernels
    print(f"first compiled call (recording and code generation): {time.perf_counter() - start:.2f} s")
    for t in leaves:
        t.grad = None
    loss = compiled(x, target)  # the replay, through the fused kernels
    grads = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    ref = step(x, target)
    worst = max(float((a - t.grad).abs().max()) for a, t in zip(grads, leaves))
    print(f"loss compiled {loss.item():.6f}, eager {ref.item():.6f}; largest gradient difference {worst:.2e}")

    eager_s = timed(lambda: step(x, target), args.steps, leaves)
    compiled_s = timed(lambda: compiled(x, target), args.steps, leaves)
    print(f"eager {eager_s * 1e3:.1f} ms/step, compiled {compiled_s * 1e3:.1f} ms/step "
          f"({compiled_s / eager_s:.2f}x eager)")


if __name__ == "__main__":
    main()
