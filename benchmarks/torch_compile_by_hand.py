"""The compiler's workloads under ``torch.compile`` (inductor) beside ember.compile, by hand.

    python benchmarks/torch_compile_by_hand.py                  # every compiler workload
    python benchmarks/torch_compile_by_hand.py --only Transformer

For each workload and library, one fresh process runs the eager and the compiled step
alternating (the compiled step's first call, its capture and code generation, is timed on
its own as the compile time), then prints the median of the rounds. Inductor writes and
compiles C++ with the system's compiler, so this is not part of ``nox -s bench``; its
compile time depends on a warm ``TORCHINDUCTOR_CACHE_DIR`` (the default, under /tmp, is
kept between runs). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

NAMES = ("LN-affine-GELU-CE", "softmax+CE", "GELU MLP step", "Transformer block", "LeNet Adam")


def _one(lib_name: str, name: str, rounds: int) -> None:
    import importlib

    import compile_workloads
    compile_workloads.TORCH_COMPILE = True
    lib = importlib.import_module(lib_name)
    importlib.import_module(f"{lib_name}.nn")
    importlib.import_module(f"{lib_name}.optim")
    eager, _, _ = compile_workloads.WORKLOADS[f"compile: {name} eager"](lib)
    compiled, _, _ = compile_workloads.WORKLOADS[f"compile: {name} compiled"](lib)
    eager()
    t0 = time.perf_counter()
    compiled()
    first = time.perf_counter() - t0
    times = {"eager": [], "compiled": []}
    for _ in range(rounds):
        for key, step in (("eager", eager), ("compiled", compiled)):
            t0 = time.perf_counter()
            step()
            times[key].append(time.perf_counter() - t0)
    steady = statistics.median(times["compiled"])
    print(json.dumps({"eager": statistics.median(times["eager"]), "compiled": steady,
                      "compile": first - steady}))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="run workloads whose name contains this text")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # LIB NAME, in the child process
    args = p.parse_args(argv)
    if args.one:
        _one(*args.one, args.rounds)
        return
    print(f"{'workload':20} {'torch eager':>12} {'inductor':>10} {'compile s':>10} "
          f"{'ember eager':>12} {'ember.compile':>14} {'compile s':>10}")
    for name in NAMES:
        if args.only and args.only.lower() not in name.lower():
            continue
        cells = []
        for lib in ("torch", "ember"):
            proc = subprocess.run([sys.executable, __file__, "--one", lib, name, "--rounds", str(args.rounds)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                cells += ["failed"] * 3
                print(proc.stderr.strip().splitlines()[-1], file=sys.stderr)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            cells += [f"{r['eager'] * 1e3:.1f} ms", f"{r['compiled'] * 1e3:.1f} ms", f"{r['compile']:.1f}"]
        print(f"{name:20} {cells[0]:>12} {cells[1]:>10} {cells[2]:>10} {cells[3]:>12} {cells[4]:>14} {cells[5]:>10}",
              flush=True)


if __name__ == "__main__":
    main()
