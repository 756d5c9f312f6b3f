"""ember.compile's compile time: the first call of a compiled workload (recording, graph
building, fusion and numba code generation) less one steady call, in a process that finds
no generated kernels in the numba cache (cold: the folder of generated code is emptied
first; ember's own kernels stay cached, as the nox sessions warm them) and in a second
process that finds the first one's (warm).

    python benchmarks/compile_times.py                      # every compiler workload
    python benchmarks/compile_times.py --only Transformer

Targets from the compiler's issue: at most 20 s cold and 2 s warm for the Transformer block.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _one(name: str) -> None:
    from compile_workloads import WORKLOADS

    import ember
    step, _, _ = WORKLOADS[f"compile: {name} compiled"](ember)
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    steady = min(_timed(step) for _ in range(3))
    print(json.dumps({"first": first, "steady": steady}))


def _timed(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def _generated_folders() -> list:
    """The generated sources and numba's index of them (``generated_<hash>`` beside them)."""
    import glob

    from ember.cpu.kernels._runtime import cache_dir
    return glob.glob(os.path.join(cache_dir(), "generated")) + glob.glob(os.path.join(cache_dir(), "generated_*"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _one(args.child)
        return
    from compile_workloads import WORKLOADS
    names = sorted({k[len("compile: "):].rsplit(" ", 1)[0] for k in WORKLOADS})
    names = [n for n in names if args.only is None or args.only.lower() in n.lower()]
    print(f"{'workload':22} {'cold compile':>13} {'warm compile':>13} {'steady call':>12}")
    for name in names:
        for folder in _generated_folders():
            shutil.rmtree(folder, ignore_errors=True)
        runs = []
        for _ in range(2):  # the first process fills the cache, the second reads it
            out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True,
                                 check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        cold, warm = (r["first"] - r["steady"] for r in runs)
        print(f"{name:22} {cold:12.2f}s {warm:12.2f}s {runs[1]['steady'] * 1e3:10.1f}ms", flush=True)


if __name__ == "__main__":
    main()
