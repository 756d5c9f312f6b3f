"""The ``image_classifier`` handler: encoded images in, top-k classes out.

Each image (JPEG, PNG, anything Pillow reads) is decoded, converted to RGB (or to one
grayscale channel), resized, center-cropped, scaled to [0, 1] and normalized with
ember_vision's transforms, then the batch ``[N, C, H, W]`` (float32) goes through the model;
its logits ``[N, classes]`` become probabilities by softmax.

``handler_config`` keys: ``topk`` [5]; ``categories`` (a list of names; else the archive's
``index_to_name.json``, TorchServe's ``{"0": "name"}`` file; else the index as text);
``preprocess``: ``grayscale`` [false], ``resize`` (shorter edge, pixels), ``center_crop``
(pixels), ``mean`` and ``std`` (per channel, in [0, 1] units).

``/predictions`` takes the image as the raw body and answers ``{category: probability}`` for
the top k, highest first (TorchServe's image classifier). The Open Inference Protocol takes a
BYTES input ``[N]`` of encoded images and answers ``probabilities`` (FP32 ``[N, classes]``)
and ``topk`` (BYTES ``[N, k]``, each ``"<probability>:<index>:<category>"`` as Triton's
classification extension writes them).

Needs ember-vision (``pip install ember-serve[vision]``).
"""

from __future__ import annotations

import io

from ..config import TensorSpec
from ._topk import categories_from, classifier_signature, topk_answers
from .base import BaseHandler, InvalidInput, Request

__all__ = ["ImageClassifierHandler"]


def _vision():
    try:
        from PIL import Image

        import ember_vision
    except ImportError as e:
        raise ImportError("the image_classifier handler needs ember-vision: pip install 'ember-serve[vision]'") from e
    return ember_vision, Image


class ImageClassifierHandler(BaseHandler):
    def initialize(self, context) -> None:
        super().initialize(context)
        tv, self._Image = _vision()
        T = tv.transforms
        hc = context.config.handler_config
        self.topk = int(hc.get("topk", 5))
        if self.topk < 1:
            raise ValueError(f"handler_config 'topk' must be >= 1, got {self.topk}")
        pre = hc.get("preprocess", {})
        unknown = set(pre) - {"grayscale", "resize", "center_crop", "mean", "std"}
        if unknown:
            raise ValueError(f"unknown preprocess key(s) {sorted(unknown)}: expected grayscale, resize, center_crop, "
                             "mean, std")
        self.grayscale = bool(pre.get("grayscale", False))
        steps = []
        if pre.get("resize"):
            steps.append(T.Resize(int(pre["resize"])))
        if pre.get("center_crop"):
            steps.append(T.CenterCrop(int(pre["center_crop"])))
        steps.append(T.ToTensor())
        if "mean" in pre or "std" in pre:
            steps.append(T.Normalize(pre.get("mean"), pre.get("std")))
        self.transform = T.Compose(steps)
        self.categories = categories_from(hc, context.archive)

    def signature(self):
        cfg = self.context.config
        if cfg.inputs or cfg.outputs:
            return list(cfg.inputs), list(cfg.outputs)
        return classifier_signature(TensorSpec("image", "BYTES", [-1]), self.categories, self.topk)

    def _images(self, request: Request) -> list[bytes]:
        if request.kind == "predict":
            return [request.body or b""]
        if not request.inputs or len(request.inputs) != 1:
            raise InvalidInput(f"send one BYTES input of encoded images, got {len(request.inputs or {})} inputs")
        arr = next(iter(request.inputs.values()))
        if arr.dtype != object:
            raise InvalidInput(f"the image input must be BYTES (encoded images), got {arr.dtype}")
        return list(arr.reshape(-1))

    def rows(self, request: Request) -> int:
        return len(self._images(request))

    def _decode(self, data: bytes, request_id: str):
        try:
            img = self._Image.open(io.BytesIO(data))
            img.load()
        except Exception as e:  # Pillow raises several types for bad data
            raise InvalidInput(f"request {request_id}: cannot decode the image ({len(data)} bytes): {e}") from None
        return img.convert("L" if self.grayscale else "RGB")

    def preprocess(self, requests: list[Request]):
        import ember
        tensors = [self.transform(self._decode(b, r.id)) for r in requests for b in self._images(r)]
        return ember.stack(tensors)

    def inference(self, batch):
        import ember
        from ember.nn import functional as F
        with ember.no_grad():
            return F.softmax(self.model(batch), dim=1)

    def postprocess(self, probs, requests: list[Request]) -> list:
        return topk_answers(probs, requests, self.categories, self.topk)
