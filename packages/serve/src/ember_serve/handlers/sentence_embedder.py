"""The ``sentence_embedder`` handler: texts in, sentence embeddings out.

The archive packs a sentence-transformers folder (``modules.json`` with Transformer, Pooling
and Normalize; or a plain Hugging Face encoder folder, which gets mean pooling) with
``--hf-folder``; ember-text's ``SentenceTransformer`` loads it. A batch of texts is tokenized
together (padded, truncated to the model's ``max_seq_length``).

``handler_config`` keys: ``normalize`` [false]: L2-normalize every embedding (beside any
Normalize module of the folder).

``/predictions`` answers the embedding (a list of floats) for one text, a list of them for a
JSON list of texts; the protocol takes BYTES ``text`` ``[N]`` and answers ``embedding`` FP32
``[N, dim]``; ``/v1/embeddings`` (OpenAI's) is served from the same batches.

Needs ember-text (``pip install 'ember-serve[text]'``).
"""

from __future__ import annotations

from ..config import TensorSpec
from .base import Request
from .text_common import TextHandler

__all__ = ["SentenceEmbedderHandler"]


class SentenceEmbedderHandler(TextHandler):
    handler_name = "sentence_embedder"

    def load(self, folder: str) -> None:
        self.model = self.ember_text.SentenceTransformer(folder)
        self.tokenizer = self.model.tokenizer
        self.normalize = bool(self.context.config.handler_config.get("normalize", False))
        self.dimension = self.model.get_sentence_embedding_dimension()

    def signature(self):
        cfg = self.context.config
        if cfg.inputs or cfg.outputs:
            return list(cfg.inputs), list(cfg.outputs)
        return self.signature_inputs(), [TensorSpec("embedding", "FP32", [-1, self.dimension or -1])]

    def preprocess(self, requests: list[Request]):
        return self.model.tokenize(self.texts(requests))

    def inference(self, features):
        import ember
        from ember.nn import functional as F
        with ember.no_grad():
            emb = self.model(features)["sentence_embedding"].float()
            if self.normalize:
                emb = F.normalize(emb, p=2, dim=1)
        return emb, features["attention_mask"].sum(dim=1)

    def postprocess(self, outputs, requests: list[Request]) -> list:
        emb, tokens = outputs[0].numpy(), outputs[1].tolist()
        answers, start = [], 0
        for r in requests:
            stop = start + r.rows
            part = emb[start:stop]
            if r.kind == "infer":
                answers.append({"embedding": part})
            elif r.kind == "openai":
                answers.append({"embeddings": part, "tokens": tokens[start:stop]})
            else:
                lists = part.tolist()
                answers.append(lists[0] if self.parse(r).single else lists)
            start = stop
        return answers
