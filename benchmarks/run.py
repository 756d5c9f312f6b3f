"""Run the workloads with ember and with PyTorch, alternating, and print a table.

    python benchmarks/run.py                       # every workload, 5 rounds
    python benchmarks/run.py --only MLP --rounds 9
    python benchmarks/run.py --threads 1           # one BLAS/torch thread

Each measurement is a fresh process (``benchmarks/measure.py``) so that imports, caches
and peak memory do not leak between the libraries; within a round ember and torch run
back to back, so machine noise hits both. Reported: median time per unit, min-max spread,
the ratio ember/torch of the medians, and peak memory (peak RSS above the RSS after
imports and, for ember, numba's loading; worker processes included). Workloads of tens
of seconds (a training epoch) run at most 3 rounds. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from workloads import LONG, WORKLOADS  # noqa: E402


def machine_report(env) -> str:
    """Cores, Python, numpy, its BLAS (from numpy's build record) and the BLAS thread setting."""
    code = ("import numpy, json\n"
            "blas = numpy.show_config(mode='dicts').get('Build Dependencies', {}).get('blas', {})\n"
            "print(json.dumps({'numpy': numpy.__version__, 'blas': f\"{blas.get('name')} {blas.get('version')}\"}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    facts = json.loads(out.stdout) if out.returncode == 0 else {}
    threads = env.get("OPENBLAS_NUM_THREADS") or env.get("OMP_NUM_THREADS") or f"default ({os.cpu_count()})"
    return (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"python {platform.python_version()}, numpy {facts.get('numpy')}, "
            f"BLAS {facts.get('blas', 'unknown')}, BLAS threads {threads}")


def measure(lib: str, name: str, env) -> dict:
    proc = subprocess.run([sys.executable, os.path.join(HERE, "measure.py"), lib, name],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default=None, help="run workloads whose name contains this text")
    p.add_argument("--threads", type=int, default=None, help="BLAS and torch threads (default: theirs)")
    args = p.parse_args(argv)
    env = dict(os.environ)
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(args.threads)
    print(machine_report(env))
    names = [n for n in WORKLOADS if args.only is None or args.only.lower() in n.lower()]
    header = f"{'workload':28} {'ember':>22} {'torch':>22} {'ratio':>6} {'mem ember/torch':>18}"
    print(header)
    print("-" * len(header))
    for name in names:
        runs = {"ember": [], "torch": []}
        for _ in range(min(args.rounds, 3) if name in LONG else args.rounds):
            for lib in ("ember", "torch"):
                runs[lib].append(measure(lib, name, env))
        cells, medians, mems = [], {}, {}
        for lib in ("ember", "torch"):
            ok = [r for r in runs[lib] if "error" not in r]
            if not ok:
                cells.append(runs[lib][0]["error"][:22])
                continue
            times = [r["seconds_per_unit"] for r in ok]
            medians[lib] = statistics.median(times)
            mems[lib] = max(r["peak_mb"] for r in ok)
            cells.append(f"{fmt_time(medians[lib])}/{ok[0]['unit']} [{fmt_time(min(times))}-{fmt_time(max(times))}]")
        ratio = f"{medians['ember'] / medians['torch']:.2f}" if len(medians) == 2 else "-"
        mem = (f"{mems['ember']:.0f}/{mems['torch']:.0f} MB" if len(mems) == 2 else "-")
        print(f"{name:28} {cells[0]:>22} {cells[1]:>22} {ratio:>6} {mem:>18}", flush=True)


if __name__ == "__main__":
    main()
