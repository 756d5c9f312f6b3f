"""Class probabilities -> answers, shared by the classifier handlers (image, text, audio).

``/predictions`` gets ``{category: probability}`` for the top k, highest first (TorchServe's
classifiers); the Open Inference Protocol gets ``probabilities`` FP32 ``[N, classes]`` and
``topk`` BYTES ``[N, k]``, each ``"<probability>:<index>:<category>"`` as Triton's
classification extension writes them.
"""

from __future__ import annotations

import json

import numpy as np

from ..config import TensorSpec
from .base import Request

__all__ = ["categories_from", "classifier_signature", "topk_answers"]


def categories_from(hc: dict, archive, default=None) -> list[str] | None:
    """``handler_config['categories']``, else the archive's ``index_to_name.json`` (TorchServe's
    ``{"0": "name"}``), else ``default``."""
    if "categories" in hc:
        return [str(c) for c in hc["categories"]]
    if archive.has("index_to_name.json"):
        mapping = json.loads(archive.read_bytes("index_to_name.json"))
        return [str(mapping[str(i)]) for i in range(len(mapping))]
    return None if default is None else [str(c) for c in default]


def classifier_signature(input_spec: TensorSpec, categories, topk: int):
    classes = len(categories) if categories else -1
    k = min(topk, classes) if classes > 0 else -1
    return [input_spec], [TensorSpec("probabilities", "FP32", [-1, classes]), TensorSpec("topk", "BYTES", [-1, k])]


def topk_answers(probs, requests: list[Request], categories, topk: int, single=lambda r: True) -> list:
    """One answer per request from ``probs`` (an ember tensor ``[rows, classes]``); ``single(r)``
    says whether a ``/predictions`` request gets one dict (else a list of them, one per row).

    Raises ValueError when fewer categories are named than the model has classes."""
    import ember
    k = min(topk, probs.shape[1])
    values, indices = ember.topk(probs, k, dim=1)
    p, v, ix = probs.numpy(), values.numpy(), indices.numpy()
    names = categories or [str(i) for i in range(probs.shape[1])]
    if len(names) < probs.shape[1]:
        raise ValueError(f"the model gives {probs.shape[1]} classes but only {len(names)} categories are named")
    answers, start = [], 0
    for r in requests:
        stop = start + r.rows
        if r.kind == "predict":
            dicts = [{names[j]: float(s) for s, j in zip(v[i], ix[i])} for i in range(start, stop)]
            answers.append(dicts[0] if single(r) else dicts)
        else:
            top = np.array([[f"{s:.6f}:{j}:{names[j]}".encode() for s, j in zip(vs, js)]
                            for vs, js in zip(v[start:stop], ix[start:stop])], dtype=object)
            answers.append({"probabilities": p[start:stop], "topk": top.reshape(stop - start, k)})
        start = stop
    return answers
