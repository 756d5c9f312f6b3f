"""What the text handlers share: ember-text, the archive's Hugging Face folder and reading texts.

A ``/predictions`` body is plain UTF-8 text (one text), or, with a JSON content type, a
string, a list of strings, or an object whose ``text`` (or ``inputs``, ``input``, ``prompt``)
is either; the other keys of the object (and ``parameters``) are the request's settings. An
Open Inference Protocol request sends one BYTES input ``[N]`` (or ``[N, 1]``) of UTF-8 texts.
"""

from __future__ import annotations

import json

import numpy as np

from ..config import TensorSpec
from .base import BaseHandler, InvalidInput, Request

__all__ = ["TextHandler", "ParsedTexts", "import_ember_text"]

TEXT_KEYS = ("text", "inputs", "input", "prompt")


def import_ember_text(handler: str):
    try:
        import ember_text
    except ImportError as e:
        raise ImportError(f"the {handler} handler needs ember-text: pip install 'ember-serve[text]'") from e
    return ember_text


class ParsedTexts:
    """The texts of one request, whether it sent one text (``single``) and its settings."""

    __slots__ = ("texts", "single", "settings")

    def __init__(self, texts: list[str], single: bool, settings: dict | None = None):
        self.texts, self.single, self.settings = texts, single, settings or {}


def _as_texts(value, where: str) -> tuple[list[str], bool]:
    if isinstance(value, str):
        return [value], True
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value), False
    raise InvalidInput(f"{where}: expected a string or a non-empty list of strings, got {type(value).__name__}")


def _texts_of_array(arr: np.ndarray, name: str) -> list[str]:
    if arr.dtype.kind == "U":
        return [str(t) for t in arr.reshape(-1)]
    if arr.dtype != object:
        raise InvalidInput(f"input {name!r} must be BYTES (UTF-8 texts), got {arr.dtype}")
    out = []
    for t in arr.reshape(-1):
        try:
            out.append(t.decode("utf-8") if isinstance(t, (bytes, bytearray)) else str(t))
        except UnicodeDecodeError as e:
            raise InvalidInput(f"input {name!r} holds a text that is not UTF-8: {e}") from None
    return out


class TextHandler(BaseHandler):
    """Loads the tokenizer from the archive's Hugging Face folder; ``load(folder)`` builds the model."""

    handler_name = "text"
    input_name = "text"

    def initialize(self, context) -> None:
        self.context = context
        self.ember_text = import_ember_text(self.handler_name)
        folder = context.archive.hf_folder
        if folder is None:
            raise ValueError(f"the {self.handler_name} handler needs an archive made with --hf-folder (a Hugging "
                             "Face-style folder: config.json, tokenizer files, safetensors weights)")
        self.folder = folder
        self.load(folder)
        if self.model is not None:
            self.model.eval()
            if context.device and context.device != "cpu":
                self.model.to(context.device)

    def load(self, folder: str) -> None:
        self.tokenizer = self.ember_text.AutoTokenizer.from_pretrained(folder)

    def signature_inputs(self) -> list[TensorSpec]:
        return [TensorSpec(self.input_name, "BYTES", [-1])]

    def parse(self, request: Request) -> ParsedTexts:
        """The request's texts (cached in ``request.parsed``); InvalidInput when unreadable."""
        if isinstance(request.parsed, ParsedTexts):
            return request.parsed
        if request.kind == "openai":
            raise InvalidInput("an OpenAI request carries its texts already parsed")
        if request.kind == "infer":
            if not request.inputs or len(request.inputs) != 1:
                raise InvalidInput(f"send one BYTES input {self.input_name!r} of UTF-8 texts, got "
                                   f"{len(request.inputs or {})} inputs")
            name, arr = next(iter(request.inputs.items()))
            parsed = ParsedTexts(_texts_of_array(arr, name), False, dict(request.parameters or {}))
        else:
            parsed = self._parse_body(request)
        if not parsed.texts:
            raise InvalidInput("the request holds no text")
        request.parsed = parsed
        return parsed

    def _parse_body(self, request: Request) -> ParsedTexts:
        body = request.body or b""
        settings = {k: v for k, v in (request.parameters or {}).items()}
        if "json" not in (request.content_type or "").lower():
            try:
                return ParsedTexts([body.decode("utf-8")], True, settings)
            except UnicodeDecodeError as e:
                raise InvalidInput(f"the body is not UTF-8 text: {e}") from None
        try:
            obj = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidInput(f"the body is not valid JSON: {e}") from None
        if isinstance(obj, dict):
            key = next((k for k in TEXT_KEYS if k in obj), None)
            if key is None:
                raise InvalidInput(f"the JSON object needs one of the keys {list(TEXT_KEYS)}")
            texts, single = _as_texts(obj[key], f"the body's {key!r}")
            extra = obj.get("parameters") or {}
            if not isinstance(extra, dict):
                raise InvalidInput("the body's 'parameters' must be an object")
            settings.update({k: v for k, v in obj.items() if k not in (key, "parameters")})
            settings.update(extra)
            return ParsedTexts(texts, single, settings)
        texts, single = _as_texts(obj, "the JSON body")
        return ParsedTexts(texts, single, settings)

    def rows(self, request: Request) -> int:
        return len(self.parse(request).texts)

    def texts(self, requests: list[Request]) -> list[str]:
        return [t for r in requests for t in self.parse(r).texts]

    def encode(self, texts: list[str], max_length: int | None = None) -> dict:
        """The tokenizer's batch ``{input_ids, attention_mask, ...}`` as ember tensors, padded and truncated."""
        return dict(self.tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                                   return_tensors="ember"))
