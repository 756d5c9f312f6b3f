"""One measurement in a fresh process: ``python measure.py LIB WORKLOAD``; prints JSON."""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from workloads import LONG, WORKLOADS, Missing  # noqa: E402


def peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024  # ru_maxrss is in KiB on Linux


def _timed(step) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def main() -> None:
    lib_name, workload = sys.argv[1], sys.argv[2]
    lib = importlib.import_module(lib_name)
    for sub in ("nn", "optim", "utils.data"):
        try:
            importlib.import_module(f"{lib_name}.{sub}")
        except ImportError:
            pass
    if lib_name == "ember":
        # torch's compiled code is loaded by its import; ember's (numba, its LLVM) by the
        # first kernel call: load it before the baseline too, so both count the workload only.
        # That first call imports numba and then fills numba's code generator with its
        # lowering rules (about 50 MB, whichever kernel comes first; torch's import alone is
        # larger than ember's import with both)
        from ember.cpu import kernels
        if kernels.enabled():
            from numba.core.registry import cpu_target
            cpu_target.target_context.refresh()
    if lib_name == "torch" and os.environ.get("OMP_NUM_THREADS"):
        lib.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    baseline = peak_rss_mb()
    try:
        step, unit, per_step = WORKLOADS[workload](lib)
    except Missing as e:
        print(f"missing {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if workload in LONG:
        times = [_timed(step)]  # one run, no warm-up
    else:
        step()  # warm-up
        times = []
        budget = time.perf_counter() + 2.0
        while len(times) < 3 or (time.perf_counter() < budget and len(times) < 50):
            times.append(_timed(step))
    times.sort()
    best_half = times[: max(1, len(times) // 2)]
    print(json.dumps({"seconds_per_unit": sum(best_half) / len(best_half) / per_step, "unit": unit,
                      "peak_mb": peak_rss_mb() - baseline}))


if __name__ == "__main__":
    main()
