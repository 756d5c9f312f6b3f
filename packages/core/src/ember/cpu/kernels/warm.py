"""Compile every kernel once, so that later processes load them from the cache.

    python -m ember.cpu.kernels.warm

Runs the ops that have kernels forward and backward on small float32 and float64
inputs in the layouts the kernels specialize on, and prints the seconds each family
took (first run: compilation; with a warm cache: loading).  CI runs it as the first
step of the core tests, so that compile time is paid once per environment.
"""

from __future__ import annotations

import sys
import time


def _families(ember):
    F = ember.nn.functional

    def grads(fn, *shapes, dtype, channels_last=False):
        xs = []
        for shape in shapes:
            x = ember.randn(*shape, dtype=dtype)
            if channels_last and x.ndim == 4:
                x = x.contiguous(memory_format=ember.channels_last)
            xs.append(x.requires_grad_())
        y = fn(*xs)
        y = y[0] if isinstance(y, tuple) else y
        y.sum().backward()

    def activation(dtype):
        for fn in (F.gelu, lambda x: F.gelu(x, approximate="tanh"), F.silu, F.mish, F.elu, F.selu, F.celu,
                   F.softplus, ember.sigmoid, ember.tanh, F.hardswish, F.hardsigmoid, F.leaky_relu, F.relu):
            grads(fn, (5, 7), dtype=dtype)
            grads(fn, (2, 3, 4, 5), dtype=dtype, channels_last=True)
        grads(lambda x: F.dropout(x, 0.3), (5, 7), dtype=dtype)

    def softmax(dtype):
        target = ember.tensor([0, 2, 1, 0, 3])
        for dim in (-1, 0):
            grads(lambda x, d=dim: F.softmax(x, d), (5, 7), dtype=dtype)
            grads(lambda x, d=dim: F.log_softmax(x, d), (5, 7), dtype=dtype)
        grads(lambda x: F.cross_entropy(x, target), (5, 7), dtype=dtype)
        grads(lambda x: F.cross_entropy(x, target, ignore_index=1, label_smoothing=0.1,
                                        weight=ember.rand(7, dtype=dtype)), (5, 7), dtype=dtype)
        grads(lambda x: F.nll_loss(x, target), (5, 7), dtype=dtype)
        # attention's in-place probabilities and their gradient (causal: in bands of 64 queries)
        grads(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (1, 2, 128, 4),
              (1, 2, 128, 4), (1, 2, 128, 4), dtype=dtype)

    def norm(dtype):
        grads(lambda x, w, b: F.layer_norm(x, (7,), w, b), (5, 7), (7,), (7,), dtype=dtype)
        grads(lambda x: F.layer_norm(x, (7,)), (5, 7), dtype=dtype)
        grads(lambda x, w: F.rms_norm(x, (7,), w), (5, 7), (7,), dtype=dtype)
        grads(lambda x, w, b: F.group_norm(x, 2, w, b), (3, 4, 5, 5), (4,), (4,), dtype=dtype)
        for cl in (False, True):
            grads(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (3, 4, 5, 5), (4,), (4,),
                  dtype=dtype, channels_last=cl)
        with ember.no_grad():
            F.batch_norm(ember.randn(3, 4, 5, 5, dtype=dtype), ember.zeros(4, dtype=dtype),
                         ember.ones(4, dtype=dtype), training=False)

    def pool(dtype):
        for cl in (False, True):
            grads(lambda x: F.max_pool2d(x, 2), (2, 3, 8, 8), dtype=dtype, channels_last=cl)
            grads(lambda x: F.max_pool2d(x, 3, 2, 1), (2, 3, 9, 9), dtype=dtype, channels_last=cl)
            grads(lambda x: F.avg_pool2d(x, 2), (2, 3, 8, 8), dtype=dtype, channels_last=cl)
            grads(lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 8, 8), dtype=dtype, channels_last=cl)

    def conv(dtype):
        for cl in (False, True):
            grads(lambda x, w, b: F.conv2d(x, w, b, padding=1), (2, 3, 8, 8), (4, 3, 3, 3), (4,), dtype=dtype,
                  channels_last=cl)
            grads(lambda x, w: F.conv2d(x, w, padding=1, groups=4), (2, 4, 8, 8), (4, 1, 3, 3), dtype=dtype,
                  channels_last=cl)
            grads(lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=4), (2, 4, 9, 9), (4, 1, 3, 3),
                  dtype=dtype, channels_last=cl)
        grads(lambda x, w: F.conv1d(x, w, padding=1), (2, 3, 9), (4, 3, 3), dtype=dtype)
        grads(lambda x, w: F.conv3d(x, w, padding=1), (1, 2, 4, 4, 4), (3, 2, 3, 3, 3), dtype=dtype)

    def winograd(dtype):
        for cl in (False, True):  # 16 channels each side, 14x14 of batch 4: 196 tiles
            grads(lambda x, w, b: F.conv2d(x, w, b, padding=1), (4, 16, 14, 14), (16, 16, 3, 3), (16,),
                  dtype=dtype, channels_last=cl)

    def rnn(dtype):
        for cls in (ember.nn.LSTM, ember.nn.GRU):
            model = cls(4, 6, num_layers=2, bidirectional=True).to(dtype)
            out, _ = model(ember.randn(3, 2, 4, dtype=dtype))
            out.sum().backward()

    def optim(dtype):
        for cls in (ember.optim.Adam, ember.optim.AdamW):
            p = ember.nn.Parameter(ember.randn(5, 7, dtype=dtype))
            opt = cls([p], lr=1e-3)
            p.sum().backward()
            opt.step()

    def embedding(dtype):
        grads(lambda w: F.embedding(ember.tensor([[0, 2], [2, 1]]), w), (3, 5), dtype=dtype)

    return {"activation": activation, "softmax": softmax, "norm": norm, "pool": pool, "conv": conv,
            "winograd": winograd, "rnn": rnn, "optim": optim, "embedding": embedding}


def main() -> int:
    import ember

    from . import _runtime
    if not _runtime.enabled():
        print("ember's numba kernels are off (EMBER_NUMBA=0, or numba cannot be imported)")
        return 0
    print(f"numba kernels: cache in {_runtime.cache_dir()}")
    total = time.perf_counter()
    for name, run in _families(ember).items():
        t0 = time.perf_counter()
        for dtype in (ember.float32, ember.float64):
            run(dtype)
        print(f"  {name:11} {time.perf_counter() - t0:6.2f} s")
    print(f"  {'all':11} {time.perf_counter() - total:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
