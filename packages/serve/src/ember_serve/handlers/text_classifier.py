"""The ``text_classifier`` handler: texts in, top-k labels out.

The archive packs a Hugging Face sequence-classification folder (``--hf-folder``: a
``config.json`` with ``id2label``, the tokenizer files, the weights); ember-text's
``AutoTokenizer`` and ``AutoModelForSequenceClassification`` load it. A batch of texts is
tokenized together (padded, truncated to ``max_length``), the logits ``[N, labels]`` become
probabilities by softmax (sigmoid for ``problem_type`` "multi_label_classification").

``handler_config`` keys: ``topk`` [5, at most the label count], ``max_length`` (tokens;
default the tokenizer's ``model_max_length`` within the model's positions), ``categories``
(names in place of the config's ``id2label``).

``/predictions`` answers ``{label: probability}`` for one text, a list of them for a JSON list
of texts; the protocol takes BYTES ``text`` ``[N]`` and answers ``probabilities`` FP32
``[N, labels]`` and ``topk`` BYTES ``[N, k]`` (``"prob:index:label"``).

Needs ember-text (``pip install 'ember-serve[text]'``).
"""

from __future__ import annotations

from ._topk import categories_from, classifier_signature, topk_answers
from .base import Request
from .text_common import TextHandler

__all__ = ["TextClassifierHandler"]


def max_positions(tokenizer, config) -> int | None:
    """The longest input the tokenizer and the model both take (None: no limit known)."""
    limits = [n for n in (getattr(tokenizer, "model_max_length", None),
                          getattr(config, "max_position_embeddings", None)) if isinstance(n, int) and n < 10 ** 8]
    return min(limits) if limits else None


class TextClassifierHandler(TextHandler):
    handler_name = "text_classifier"

    def load(self, folder: str) -> None:
        super().load(folder)
        self.model = self.ember_text.models.AutoModelForSequenceClassification.from_pretrained(folder)
        hc = self.context.config.handler_config
        config = self.model.config
        labels = [config.id2label[i] for i in sorted(config.id2label)]
        self.categories = categories_from(hc, self.context.archive, labels)
        self.topk = int(hc.get("topk", 5))
        if self.topk < 1:
            raise ValueError(f"handler_config 'topk' must be >= 1, got {self.topk}")
        self.max_length = int(hc["max_length"]) if "max_length" in hc else max_positions(self.tokenizer, config)
        self.multi_label = getattr(config, "problem_type", None) == "multi_label_classification"

    def signature(self):
        cfg = self.context.config
        if cfg.inputs or cfg.outputs:
            return list(cfg.inputs), list(cfg.outputs)
        return classifier_signature(self.signature_inputs()[0], self.categories, self.topk)

    def preprocess(self, requests: list[Request]):
        return self.encode(self.texts(requests), self.max_length)

    def inference(self, batch):
        import ember
        with ember.no_grad():
            logits = self.model(**batch).logits.float()
            return logits.sigmoid() if self.multi_label else logits.softmax(dim=1)

    def postprocess(self, probs, requests: list[Request]) -> list:
        return topk_answers(probs, requests, self.categories, self.topk, single=lambda r: self.parse(r).single)
