"""Opening a large checkpoint with and without mmap, ember beside PyTorch.

    python benchmarks/checkpoint_mmap.py [--size-mb 1024] [--dir /tmp]

torch.save writes one state dict of float32 tensors (64 MiB each) totalling ``--size-mb``;
each measurement runs in a fresh process: the seconds ``load`` takes, the resident memory
it added, and the seconds a full read of every tensor (a sum) takes afterwards. The file
was just written, so it is in the page cache: these are the costs of mapping and copying,
not of the disk. Nothing is asserted; not run in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_CHILD = r"""
import json, os, sys, time
lib_name, path, mmap = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
lib = __import__(lib_name)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
before = rss()
t0 = time.perf_counter()
sd = lib.load(path, mmap=mmap, weights_only=True)
opened = time.perf_counter() - t0
added = rss() - before
t0 = time.perf_counter()
total = sum(float(v.sum()) for v in sd.values())
touched = time.perf_counter() - t0
print(json.dumps({"open_s": opened, "rss_mb": added / 2**20, "touch_s": touched, "sum": total}))
"""


def _measure(lib: str, path: str, mmap: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, lib, path, "1" if mmap else "0"], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    import torch
    chunk = 64 * 2**20 // 4
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = os.path.join(folder, "big.pt")
        n = max(1, args.size_mb // 64)
        t0 = time.perf_counter()
        torch.save({f"layer{i}.weight": torch.full((chunk,), 1.0 / (i + 1)) for i in range(n)}, path)
        size = os.path.getsize(path) / 2**20
        print(f"checkpoint: {size:.0f} MiB written by torch.save in {time.perf_counter() - t0:.2f} s")
        print(f"{'library':8} {'mmap':5} {'open (s)':>9} {'RSS added (MiB)':>16} {'read all (s)':>13}")
        rows = {}
        for mmap in (True, False):
            for lib in ("ember", "torch"):
                r = rows[lib, mmap] = _measure(lib, path, mmap)
                print(f"{lib:8} {str(mmap):5} {r['open_s']:9.4f} {r['rss_mb']:16.1f} {r['touch_s']:13.3f}")
        for mmap in (True, False):
            ratio = rows["ember", mmap]["open_s"] / max(rows["torch", mmap]["open_s"], 1e-9)
            print(f"open time ember / torch, mmap={mmap}: {ratio:.2f}")


if __name__ == "__main__":
    main()
