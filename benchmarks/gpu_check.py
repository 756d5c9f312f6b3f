"""One prepared run on a machine with an NVIDIA GPU: the cuda tests, then ember beside the
PyTorch installed there on the GPU workloads, a short table printed last.

    PYTHONPATH=packages/core/src:packages/vision/src python benchmarks/gpu_check.py --quick

``--quick`` (meant to finish in under 4 minutes on an H200) runs the tests marked ``cuda``
in ``tests/core/cuda`` (the kernels and the op table on cuda) and 5 timed rounds per
workload; without it, every test marked ``cuda`` and 20 rounds. Failing tests are listed,
then pytest's summary line. Each workload is timed as the median of its
rounds after one warm-up, with the device synchronized around each round; a workload that
fails on ember prints its error in the table instead of a time. Nothing is asserted here:
the tests assert, this reports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_tests(quick: bool) -> str:
    """pytest over the cuda tests; returns its last summary line."""
    # the GPU tests only: the ones beside them (kernel sources, host runs) need no GPU and run in CI
    targets = ["tests/core/cuda", "-m", "cuda"] if quick else ["tests/core", "-m", "cuda"]
    # a test file that cannot be collected there (a missing package) must not stop the others
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=line",
           "--continue-on-collection-errors", *targets]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    failures = [ln for ln in lines if ln.startswith("FAILED") or ln.startswith("ERROR")]
    for ln in failures[:40]:
        print(ln)
    return lines[-1] if lines else proc.stderr.strip()[-300:]


# ---- workloads: (lib, device) -> a step to time, and the units it processes ----------

def mlp_step(L):
    model = L.nn.Sequential(L.nn.Linear(1024, 4096), L.nn.GELU(), L.nn.Linear(4096, 1024)).to("cuda")
    opt = L.optim.AdamW(model.parameters(), lr=1e-3)
    x = L.randn(512, 1024, device="cuda")

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    return step


def transformer_step(L):
    layer = L.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True).to("cuda")
    x = L.randn(32, 128, 512, device="cuda", requires_grad=True)

    def step():
        layer(x).sum().backward()
    return step


def transformer_amp_step(L):
    layer = L.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True).to("cuda")
    x = L.randn(32, 128, 512, device="cuda", requires_grad=True)

    def step():
        with L.autocast("cuda", dtype=L.bfloat16):
            out = layer(x)
        out.float().sum().backward()
    return step


def resnet18_step(L):
    if L.__name__ == "torch":
        import torchvision.models as models
    else:
        import ember_vision.models as models
    model = models.resnet18(num_classes=1000).to("cuda")
    opt = L.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = L.randn(64, 3, 224, 224, device="cuda")
    y = L.randint(0, 1000, (64,), device="cuda")

    def step():
        opt.zero_grad()
        L.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def softmax_bandwidth(L):
    x = L.randn(8192, 8192, device="cuda")
    return lambda: L.softmax(x, -1)


def copy_bandwidth(L):
    x = L.randn(8192, 8192, device="cuda")
    return lambda: x.clone()


def layer_norm_bandwidth(L):
    x = L.randn(8192, 8192, device="cuda")
    w, b = L.ones(8192, device="cuda"), L.zeros(8192, device="cuda")
    return lambda: L.nn.functional.layer_norm(x, (8192,), w, b)


def gelu_bandwidth(L):
    x = L.randn(8192, 8192, device="cuda")
    return lambda: L.nn.functional.gelu(x)


def attention_step(L):
    q, k, v = (L.randn(16, 16, 1024, 64, device="cuda", requires_grad=True) for _ in range(3))

    def step():
        L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    return step


def attention_half_step(L):
    q, k, v = (L.randn(16, 16, 1024, 64, device="cuda", dtype=L.float16, requires_grad=True) for _ in range(3))

    def step():
        L.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    return step


def conv_step(L):
    conv = L.nn.Conv2d(64, 64, 3, padding=1).to("cuda")
    x = L.randn(32, 64, 56, 56, device="cuda", requires_grad=True)

    def step():
        conv(x).sum().backward()
    return step


def depthwise_step(L):
    conv = L.nn.Conv2d(128, 128, 3, padding=1, groups=128).to("cuda")
    x = L.randn(32, 128, 56, 56, device="cuda", requires_grad=True)

    def step():
        conv(x).sum().backward()
    return step


def masked_attention_step(L):
    q, k, v = (L.randn(8, 12, 512, 64, device="cuda", requires_grad=True) for _ in range(3))
    mask = L.rand(8, 1, 1, 512, device="cuda") > 0.1  # key padding

    def step():
        L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
    return step


def lstm_step(L):
    layer = L.nn.LSTM(512, 512).to("cuda")
    x = L.randn(64, 32, 512, device="cuda", requires_grad=True)

    def step():
        layer(x)[0].sum().backward()
    return step


def cross_entropy_step(L):
    logits = L.randn(8192, 32000, device="cuda", requires_grad=True)
    target = L.randint(0, 32000, (8192,), device="cuda")

    def step():
        L.nn.functional.cross_entropy(logits, target, label_smoothing=0.1).backward()
    return step


def dropout_step(L):
    x = L.randn(8192, 8192, device="cuda", requires_grad=True)

    def step():
        L.nn.functional.dropout(x, 0.1).sum().backward()
    return step


def launch_overhead(L):
    x = L.ones(16, device="cuda")

    def step():
        for _ in range(100):
            x.add(1.0)
    return step


COPY = "clone [8192, 8192] (copy bandwidth)"
# each reads and writes one [8192, 8192] float32 array, as the clone does: its time over
# theirs is the share of the copy bandwidth they reach (the target: 70%)
BANDWIDTH_BOUND = ("softmax [8192, 8192]", "layer_norm [8192, 8192]", "gelu [8192, 8192]")

WORKLOADS = [("MLP AdamW step [512, 1024->4096->1024]", mlp_step),
             ("Transformer layer fwd+bwd [32, 128, 512]", transformer_step),
             ("Transformer layer, autocast bfloat16", transformer_amp_step),
             ("ResNet18 SGD step, batch 64", resnet18_step),
             ("softmax [8192, 8192]", softmax_bandwidth),
             ("layer_norm [8192, 8192]", layer_norm_bandwidth),
             ("gelu [8192, 8192]", gelu_bandwidth),
             (COPY, copy_bandwidth),
             ("conv2d 3x3 fwd+bwd [32, 64, 56, 56] -> 64", conv_step),
             ("depthwise conv 3x3 fwd+bwd [32, 128, 56, 56]", depthwise_step),
             ("causal SDPA fwd+bwd [16, 16, 1024, 64]", attention_step),
             ("causal SDPA float16 [16, 16, 1024, 64]", attention_half_step),
             ("key-padding SDPA fwd+bwd [8, 12, 512, 64]", masked_attention_step),
             ("LSTM(512, 512) fwd+bwd [64, 32, 512]", lstm_step),
             ("cross_entropy fwd+bwd [8192, 32000]", cross_entropy_step),
             ("dropout fwd+bwd [8192, 8192]", dropout_step),
             ("100 small adds (launch overhead)", launch_overhead)]


def time_workload(L, make, rounds: int) -> float:
    """Median seconds of one step over ``rounds``, after a warm-up step."""
    sync = L.cuda.synchronize
    step = make(L)
    step()
    sync()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the short run: under 4 minutes")
    parser.add_argument("--skip-tests", action="store_true", help="time the workloads only")
    args = parser.parse_args(argv)
    import torch

    import ember
    print(f"GPU: {torch.cuda.get_device_name()} | torch {torch.__version__} | python {sys.version.split()[0]}")
    print(f"ember sees cuda: {ember.cuda.is_available()}")
    tests = "not run" if args.skip_tests else run_tests(args.quick)
    rounds = 5 if args.quick else 20
    rows = []
    for name, make in WORKLOADS:
        cells = []
        for L in (ember, torch):
            try:
                cells.append(time_workload(L, make, rounds))
            except Exception as exc:  # the table reports it; the traceback goes above it
                traceback.print_exc(limit=3)
                cells.append(f"{type(exc).__name__}: {str(exc)[:60]}")
        rows.append((name, *cells))
    print(f"\ncuda tests: {tests}")
    print(f"{'workload':44} {'ember ms':>12} {'torch ms':>10} {'ratio':>7}")
    for name, e, t in rows:
        if isinstance(e, float) and isinstance(t, float):
            print(f"{name:44} {e * 1e3:12.3f} {t * 1e3:10.3f} {e / t:7.2f}")
        else:
            print(f"{name:44} {e if isinstance(e, str) else f'{e * 1e3:.3f}'} | "
                  f"{t if isinstance(t, str) else f'{t * 1e3:.3f}'}")
    times = {name: (e, t) for name, e, t in rows}
    for name in BANDWIDTH_BOUND:
        shares = [f"{lib} {copy / own:.0%}" for lib, own, copy in zip(("ember", "torch"), times[name], times[COPY])
                  if isinstance(own, float) and isinstance(copy, float)]
        print(f"{name} at {', '.join(shares) or 'n/a'} of the copy bandwidth")


if __name__ == "__main__":
    main()
