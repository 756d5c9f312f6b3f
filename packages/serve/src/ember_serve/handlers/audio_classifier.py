"""The ``audio_classifier`` handler: audio in, top-k labels out, through an ember-audio bundle.

A bundle (``handler_config['bundle']``, a name in ``ember_audio.pipelines``; default
``SPOKEN_DIGITS_KWS``, the spoken-digit classifier whose weights ship with ember-audio) gives
the sample rate, the feature front end and the labels; the model is the archive's own (model
file, class and weights: e.g. the bundle's architecture retrained) or, when the archive holds
none, the bundle's. Each clip is decoded (wav, flac, ogg... through soundfile), mixed down to
mono, resampled to the bundle's rate, fitted to the features' length, turned into features, and
the logits become probabilities by softmax.

``handler_config`` keys: ``bundle``, ``topk`` [5], ``categories`` (names in place of the
bundle's labels; or TorchServe's ``index_to_name.json`` in the archive).

``/predictions`` takes an audio file as the raw body and answers ``{label: probability}`` for
the top k. The protocol takes ``waveform`` FP32 ``[N, samples]`` (or ``[samples]``) at the
bundle's rate (an infer request's ``sample_rate`` parameter names another, which is resampled),
or, when the config declares a BYTES input instead, ``[N]`` encoded files; it answers
``probabilities`` FP32 ``[N, labels]`` and ``topk`` BYTES ``[N, k]`` (``"prob:index:label"``).

Needs ember-audio (``pip install 'ember-serve[audio]'``).
"""

from __future__ import annotations

import io

import numpy as np

from ..config import TensorSpec
from ._topk import categories_from, classifier_signature, topk_answers
from .base import BaseHandler, InvalidInput, Request

__all__ = ["AudioClassifierHandler"]


def _audio():
    try:
        import ember_audio
    except ImportError as e:
        raise ImportError("the audio_classifier handler needs ember-audio: pip install 'ember-serve[audio]'") from e
    return ember_audio


class AudioClassifierHandler(BaseHandler):
    def initialize(self, context) -> None:
        super().initialize(context)
        self.audio = _audio()
        hc = context.config.handler_config
        name = hc.get("bundle", "SPOKEN_DIGITS_KWS")
        bundle = getattr(self.audio.pipelines, str(name), None)
        if bundle is None or not hasattr(bundle, "get_features"):
            raise ValueError(f"handler_config 'bundle' {name!r} is not a bundle of ember_audio.pipelines with "
                             "features (e.g. 'SPOKEN_DIGITS_KWS')")
        self.sample_rate = int(bundle.sample_rate)
        self.features = bundle.get_features().eval()
        if self.model is None:
            self.model = bundle.get_model()
        if context.device and context.device != "cpu":
            self.model.to(context.device)
            self.features.to(context.device)
        self.categories = categories_from(hc, context.archive, bundle.get_labels())
        self.topk = int(hc.get("topk", 5))
        if self.topk < 1:
            raise ValueError(f"handler_config 'topk' must be >= 1, got {self.topk}")

    def signature(self):
        cfg = self.context.config
        if cfg.inputs or cfg.outputs:
            return list(cfg.inputs), list(cfg.outputs)
        return classifier_signature(TensorSpec("waveform", "FP32", [-1, -1]), self.categories, self.topk)

    # ---- reading clips ------------------------------------------------------------------
    def _decode(self, data: bytes, request_id: str):
        try:
            wave, sr = self.audio.load(io.BytesIO(bytes(data)))
        except Exception as e:  # soundfile raises its own error types for data it cannot read
            raise InvalidInput(f"request {request_id}: cannot decode the audio ({len(data)} bytes): {e}") from None
        return self._at_rate(wave.mean(dim=0), sr)

    def _at_rate(self, wave, sr):
        if sr != self.sample_rate:
            wave = self.audio.functional.resample(wave, int(sr), self.sample_rate)
        return wave

    def _input(self, request: Request) -> np.ndarray:
        if not request.inputs or len(request.inputs) != 1:
            raise InvalidInput(f"send one input (FP32 waveforms, or BYTES audio files), got "
                               f"{len(request.inputs or {})} inputs")
        arr = next(iter(request.inputs.values()))
        if arr.dtype != object and not (arr.dtype.kind == "f" and arr.ndim in (1, 2) and arr.shape[-1] > 0):
            raise InvalidInput(f"the waveform must be FP32 [N, samples] or [samples], got {arr.dtype} "
                               f"{list(arr.shape)}")
        return arr

    def rows(self, request: Request) -> int:
        # counted without decoding: decoding and resampling happen in the worker (preprocess)
        if request.kind == "predict":
            return 1
        arr = self._input(request)
        return int(arr.size) if arr.dtype == object else (1 if arr.ndim == 1 else int(arr.shape[0]))

    def _clips(self, request: Request) -> list:
        import ember
        if request.kind == "predict":
            return [self._decode(request.body or b"", request.id)]
        arr = self._input(request)
        if arr.dtype == object:
            return [self._decode(b, request.id) for b in arr.reshape(-1)]
        sr = (request.parameters or {}).get("sample_rate", self.sample_rate)
        if isinstance(sr, bool) or not isinstance(sr, (int, float)) or sr <= 0:
            raise InvalidInput(f"the sample_rate parameter must be a positive number of Hz, got {sr!r}")
        rows = np.asarray(arr, dtype=np.float32).reshape(-1, arr.shape[-1])
        return [self._at_rate(ember.from_numpy(np.ascontiguousarray(r)), sr) for r in rows]

    def preprocess(self, requests: list[Request]):
        import ember
        # each clip's features alone: the MFCC's top_db floor is taken over a whole [N, mels,
        # frames] batch (torchaudio's rule for 3-d input), which would make an answer depend on
        # the requests it was batched with
        with ember.no_grad():
            return ember.cat([self.features(self.features.fit_length(c)[None]) for r in requests
                              for c in self._clips(r)])

    def inference(self, batch):
        import ember
        with ember.no_grad():
            return self.model(batch).float().softmax(dim=1)

    def postprocess(self, probs, requests: list[Request]) -> list:
        return topk_answers(probs, requests, self.categories, self.topk)
