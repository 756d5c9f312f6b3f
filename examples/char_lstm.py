"""Train a character-level LSTM language model on the fortune cookies of Debian's
``fortunes`` package, then generate text from it.

    python examples/char_lstm.py                     # defaults: a few minutes on 2 CPU cores
    python examples/char_lstm.py --epochs 1 --batches-per-epoch 20   # a quick slice

Measured run (2 shared CPU cores, ``OPENBLAS_NUM_THREADS=1 python examples/char_lstm.py``,
defaults): 146 s wall, final epoch loss 2.029 (perplexity 7.6); a sample at temperature 0.6:

    The comporting the hourd who sher whing your be decial the can the amant that he
    world mey there prooder is not a coveling in the clust about to be an are while ...

On a busy machine, one BLAS thread (``OPENBLAS_NUM_THREADS=1``) avoids waiting on
descheduled BLAS workers.

Written against PyTorch's API: with ``ember`` replaced by ``torch`` in its three ember
imports it runs unchanged on PyTorch.

The text is read from ``--data-dir`` (default: where Debian installs it): every plain file
there holds fortunes separated by lines holding only ``%``; the ``.dat`` and ``.u8`` index
files and symbolic links are skipped.  Install it with ``apt-get install fortunes``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from tqdm import tqdm

import ember as torch
from ember import nn
from ember.nn import functional as F

DEFAULT_DATA_DIR = "/usr/share/games/fortunes"
# characters the model knows; anything else in the text becomes '?'
ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))


def read_fortunes(data_dir: str) -> list[str]:
    """The fortunes in every plain fortune file of ``data_dir``."""
    if not os.path.isdir(data_dir):
        sys.exit(f"no fortune files in {data_dir}: install them with `apt-get install fortunes` "
                 "(or point --data-dir at a folder of fortune files)")
    fortunes = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name.endswith((".dat", ".u8")) or os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            fortunes += [p.strip("\n") for p in f.read().split("\n%\n") if p.strip()]
    if not fortunes:
        sys.exit(f"no fortune files in {data_dir}: install them with `apt-get install fortunes`")
    return fortunes


def encode(text: str):
    index = {c: i for i, c in enumerate(ALPHABET)}
    unknown = index["?"]
    return torch.tensor([index.get(c, unknown) for c in text], dtype=torch.int64)


class CharLSTM(nn.Module):
    """Embedding -> LSTM -> linear layer over the alphabet."""

    def __init__(self, vocab: int, embed: int, hidden: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def batches(data, count: int, batch: int, seq_len: int, generator):
    """``count`` random (input, target) pairs of ``[batch, seq_len]`` windows of ``data``."""
    for _ in range(count):
        starts = torch.randint(0, len(data) - seq_len - 1, (batch,), generator=generator)
        idx = starts[:, None] + torch.arange(seq_len + 1)[None, :]
        window = data[idx]
        yield window[:, :-1], window[:, 1:]


@torch.no_grad()
def sample(model, prompt: str, length: int, temperature: float, device) -> str:
    """Continue ``prompt`` one character at a time, drawing from softmax(logits / temperature)."""
    model.eval()
    x = encode(prompt).to(device)[None, :]
    logits, state = model(x)
    out = []
    for _ in range(length):
        probs = F.softmax(logits[0, -1] / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1)
        out.append(ALPHABET[int(nxt.item())])
        logits, state = model(nxt[None, :], state)
    model.train()
    return prompt + "".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batches-per-epoch", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--sample-length", type=int, default=300)
    p.add_argument("--device", default="cpu")
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    fortunes = read_fortunes(args.data_dir)
    text = "\n\n".join(fortunes)
    data = encode(text).to(args.device)
    print(f"{len(fortunes)} fortunes, {len(text)} characters, alphabet of {len(ALPHABET)}")

    model = CharLSTM(len(ALPHABET), args.embed, args.hidden, args.layers).to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(args.seed)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        total = 0.0
        bar = tqdm(batches(data, args.batches_per_epoch, args.batch_size, args.seq_len, gen),
                   total=args.batches_per_epoch, desc=f"epoch {epoch}", leave=False)
        for x, y in bar:
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            total += loss.item()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        mean = total / args.batches_per_epoch
        print(f"epoch {epoch}: loss {mean:.3f} (perplexity {math.exp(mean):.1f}), "
              f"{time.perf_counter() - start:.0f} s")
    for prompt in ("The ", "Q: ", "A "):
        print(f"\n--- sample (temperature {args.temperature}) ---")
        print(sample(model, prompt, args.sample_length, args.temperature, args.device))


if __name__ == "__main__":
    main()
