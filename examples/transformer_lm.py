"""A small decoder-only Transformer language model over characters, trained on fortunes.

    python examples/transformer_lm.py                      # defaults: a few minutes on 2 cores
    python examples/transformer_lm.py --epochs 1 --steps 50  # a quick slice

Measured run, defaults, on 2 CPU cores shared with other jobs (one BLAS thread: with two,
OpenBLAS's spinning workers slowed a contended machine several times over)::

    $ OPENBLAS_NUM_THREADS=1 python examples/transformer_lm.py
    15218 fortunes, 2561403 characters, vocabulary 100
    249316 parameters
    epoch 1: train loss 2.645, validation loss 2.748 (3.96 bits/char)
    epoch 2: train loss 2.525, validation loss 2.620 (3.78 bits/char)
    trained in 115 s                      (118 s for the whole run)
    --- sample 1 ---
    Th  tone wo ten the Darke'xthencas fout o pe, co timo hanoban an.

The model is a causal TransformerEncoder (GPT-style: each position attends only to
earlier ones through the square subsequent mask) over learned character and position
embeddings, predicting the next character.  The text is Debian's ``fortunes`` package:
the plain-text files of ``--data-dir`` (fortunes separated by lines holding only ``%``;
the ``.dat`` indexes, ``.u8`` files and symlinks are skipped).  Install it with
``apt-get install fortunes``.

Written against PyTorch's API: with ``ember`` replaced by ``torch`` in its three ember
imports it runs unchanged on PyTorch.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
from tqdm import tqdm

import ember as torch
from ember import nn
from ember.nn import functional as F

DEFAULT_DATA_DIR = "/usr/share/games/fortunes"


def read_fortunes(data_dir: str) -> list[str]:
    """Every fortune of the plain-text files in ``data_dir``."""
    if not os.path.isdir(data_dir):
        sys.exit(f"error: no fortunes directory at {data_dir}; install the texts with "
                 "`apt-get install fortunes` or point --data-dir at a folder of fortune files")
    fortunes = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name.endswith((".dat", ".u8")) or os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        fortunes.extend(chunk.strip("\n") for chunk in text.split("\n%\n") if chunk.strip())
    if not fortunes:
        sys.exit(f"error: no fortune files found in {data_dir}; install them with `apt-get install fortunes`")
    return fortunes


class CharVocab:
    """Characters seen in the corpus (those seen fewer than ``min_count`` times share one id)."""

    def __init__(self, text: str, min_count: int = 20):
        chars, counts = np.unique(np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32), return_counts=True)
        kept = [chr(c) for c, n in zip(chars, counts) if n >= min_count]
        self.itos = ["\ufffd"] + kept
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> np.ndarray:
        return np.array([self.stoi.get(c, 0) for c in text], dtype=np.int64)

    def decode(self, ids) -> str:
        return "".join(self.itos[int(i)] for i in ids)


class CharTransformer(nn.Module):
    """Token and position embeddings -> causal TransformerEncoder (pre-norm) -> LayerNorm ->
    linear head.  Input ``[N, T]`` character ids (T <= context), output logits ``[N, T, vocab]``."""

    def __init__(self, vocab: int, context: int, d_model: int, layers: int, nhead: int, dropout: float):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        return self.head(self.norm(self.blocks(x, mask=mask, is_causal=True)))


def batches(data: np.ndarray, batch: int, context: int, rng):
    """Random windows: inputs ``[batch, context]`` and the next characters as targets."""
    starts = rng.integers(0, len(data) - context - 1, batch)
    idx = starts[:, None] + np.arange(context + 1)
    win = data[idx]
    return torch.from_numpy(win[:, :-1].copy()), torch.from_numpy(win[:, 1:].copy())


@torch.no_grad()
def evaluate(model, data, batch, context, rng, n_batches=10) -> float:
    model.eval()
    losses = []
    for _ in range(n_batches):
        x, y = batches(data, batch, context, rng)
        losses.append(F.cross_entropy(model(x).reshape(-1, model.head.out_features), y.reshape(-1)).item())
    model.train()
    return sum(losses) / len(losses)


@torch.no_grad()
def sample(model, vocab, prompt: str, length: int, temperature: float, generator) -> str:
    """Generate ``length`` characters after ``prompt``, one at a time (no cache: each step
    reruns the last ``context`` characters)."""
    model.eval()
    ids = list(vocab.encode(prompt))
    for _ in range(length):
        x = torch.tensor([ids[-model.context:]])
        logits = model(x)[0, -1] / temperature
        probs = F.softmax(logits, dim=-1)
        ids.append(int(torch.multinomial(probs, 1, generator=generator).item()))
    model.train()
    return vocab.decode(ids)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR, help="folder of fortune files")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps", type=int, default=150, help="training steps per epoch")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--context", type=int, default=64, help="characters the model sees")
    p.add_argument("--d-model", type=int, default=96)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--samples", type=int, default=2, help="samples generated at the end")
    p.add_argument("--sample-length", type=int, default=200)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    fortunes = read_fortunes(args.data_dir)
    text = "\n\n".join(fortunes) + "\n"
    vocab = CharVocab(text)
    data = vocab.encode(text)
    split = int(len(data) * 0.95)
    train, valid = data[:split], data[split:]
    print(f"{len(fortunes)} fortunes, {len(data)} characters, vocabulary {len(vocab)}")

    model = CharTransformer(len(vocab), args.context, args.d_model, args.layers, args.heads, args.dropout)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total = args.epochs * args.steps
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))

    start = time.time()
    for epoch in range(args.epochs):
        bar = tqdm(range(args.steps), desc=f"epoch {epoch + 1}/{args.epochs}")
        running = None
        for _ in bar:
            x, y = batches(train, args.batch_size, args.context, rng)
            loss = F.cross_entropy(model(x).reshape(-1, len(vocab)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
            bar.set_postfix(loss=f"{running:.3f}")
        val = evaluate(model, valid, args.batch_size, args.context, rng)
        print(f"epoch {epoch + 1}: train loss {running:.3f}, validation loss {val:.3f} "
              f"({val / math.log(2):.2f} bits/char)")
    print(f"trained in {time.time() - start:.0f} s")

    gen = torch.Generator().manual_seed(args.seed)
    for i in range(args.samples):
        print(f"--- sample {i + 1} ---")
        print(sample(model, vocab, "\n", args.sample_length, args.temperature, gen).strip())


if __name__ == "__main__":
    main()
