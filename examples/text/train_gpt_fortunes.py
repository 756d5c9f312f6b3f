"""A small GPT trained on Debian's fortunes with a byte-level BPE tokenizer it trains itself.

    python examples/text/train_gpt_fortunes.py                 # defaults
    python examples/text/train_gpt_fortunes.py --steps 100     # a quick slice

The model and tokenizer are saved with ``save_pretrained`` into ``--save-dir`` (``gpt_fortunes``;
an empty value saves nothing): the Hugging Face-style folder that ``ember-archive create
--hf-folder`` packs and ``examples/serve/serve_gpt_chat.py`` serves.

The fortunes (``apt-get install fortunes``) are split 90/10 into train and validation by
fortune; a byte-level BPE tokenizer is trained on the training text only; a GPT-2-layout model
(``ember_text.models.GPT2LMHeadModel``) learns from random windows of the token stream. The
validation perplexity is printed beside the unigram baseline (the perplexity of predicting every
token from its training frequency, add-one smoothed): a model that learned anything about
context beats it. Samples come from ``generate`` with top-k sampling.

Measured run, defaults, on 2 CPU cores shared with other jobs::

    $ python examples/text/train_gpt_fortunes.py
    15218 fortunes; 858680 training and 96107 validation tokens; vocabulary 2000
    669184 parameters
    training: 100%|██████████| 600/600 [... loss=4.785]
    validation perplexity 115.3  (unigram baseline 624.2)
    --- sample 2 ---
    The lothet, in babis, I should you
    cour.  The Leting. Shakes is that is no man.
    total 487 s
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

import numpy as np
from tqdm import tqdm

import ember
import ember_text
from ember.utils.data import DataLoader
from ember_text.datasets import RandomWindowDataset
from ember_text.models import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fortunes import DEFAULT_DIR, read_fortunes  # noqa: E402


def unigram_perplexity(train_ids: np.ndarray, val_ids: np.ndarray, vocab_size: int) -> float:
    counts = np.bincount(train_ids, minlength=vocab_size).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(np.exp(-logp[val_ids].mean()))


@ember.no_grad()
def perplexity(model, ids: np.ndarray, block: int, batch: int) -> float:
    model.eval()
    n = (len(ids) - 1) // block
    total, count = 0.0, 0
    for start in range(0, n, batch):
        rows = range(start, min(start + batch, n))
        x = ember.tensor(np.stack([ids[r * block:(r + 1) * block] for r in rows]))
        y = ember.tensor(np.stack([ids[r * block + 1:(r + 1) * block + 1] for r in rows]))
        logits = model(x, use_cache=False).logits
        loss = ember.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum")
        total += float(loss)
        count += y.numel()
    model.train()
    return math.exp(total / count)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=DEFAULT_DIR)
    p.add_argument("--vocab-size", type=int, default=2000)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=128)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--max-fortunes", type=int, default=None, help="use only this many fortunes (quick runs)")
    p.add_argument("--save-dir", default="gpt_fortunes", help="where save_pretrained writes the model and tokenizer "
                   "('' saves nothing)")
    args = p.parse_args(argv)
    started = time.time()
    random.seed(args.seed)
    ember.manual_seed(args.seed)
    fortunes = [f for items in read_fortunes(args.data_dir).values() for f in items]
    random.shuffle(fortunes)
    fortunes = fortunes[: args.max_fortunes]
    cut = int(0.9 * len(fortunes))
    train_text, val_text = fortunes[:cut], fortunes[cut:]
    tok = ember_text.train_byte_level_bpe(iterator=train_text, vocab_size=args.vocab_size, min_frequency=2)
    eos = tok.eos_token_id

    def encode(texts):
        ids = []
        for row in tok(texts, add_special_tokens=False)["input_ids"]:
            ids.extend(row)
            ids.append(eos)
        return np.asarray(ids, dtype=np.int64)

    train_ids, val_ids = encode(train_text), encode(val_text)
    print(f"{len(fortunes)} fortunes; {len(train_ids)} training and {len(val_ids)} validation tokens; "
          f"vocabulary {len(tok)}")
    config = GPT2Config(vocab_size=len(tok), n_positions=args.block_size * 2, n_embd=args.n_embd,
                        n_layer=args.n_layer, n_head=args.n_head, bos_token_id=eos, eos_token_id=eos,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    print(f"{model.num_parameters()} parameters")
    data = RandomWindowDataset(ember.from_numpy(train_ids), args.block_size, args.steps * args.batch_size,
                               seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch_size)
    opt = ember.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps)
    model.train()
    bar = tqdm(loader, total=args.steps, desc="training")
    for x, y in bar:
        logits = model(x, use_cache=False).logits  # y is x shifted by one: every position predicts its next token
        loss = ember.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        bar.set_postfix(loss=f"{float(loss):.3f}")
    ppl = perplexity(model, val_ids, args.block_size, 32)
    base = unigram_perplexity(train_ids, val_ids, len(tok))
    print(f"validation perplexity {ppl:.1f}  (unigram baseline {base:.1f})")
    model.eval()
    for i in range(args.samples):
        prompt = ember.tensor([[eos]])
        out = model.generate(prompt, max_new_tokens=60, do_sample=True, top_k=40, temperature=0.9,
                             generator=ember.Generator().manual_seed(args.seed + i))
        print(f"--- sample {i + 1} ---\n{tok.decode(out[0, 1:].tolist(), skip_special_tokens=True)}")
    if args.save_dir:
        model.save_pretrained(args.save_dir)
        tok.save_pretrained(args.save_dir)
        print(f"saved the model and tokenizer to {args.save_dir}")
    print(f"total {time.time() - started:.0f} s")
    return ppl, base


if __name__ == "__main__":
    main()
