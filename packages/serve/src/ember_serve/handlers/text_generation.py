"""The ``text_generation`` handler: a prompt in, its continuation out (a causal language model).

The archive packs a Hugging Face causal-LM folder (``--hf-folder``: GPT-2 or Llama layouts,
the tokenizer files, the weights); ember-text's ``AutoTokenizer`` and
``AutoModelForCausalLM`` load it. The prompt is tokenized with the tokenizer's special
tokens (a Llama tokenizer adds its BOS); generation stops at the model's (or tokenizer's)
EOS token, at a stop string, or after ``max_new_tokens``. The answer is the generated text
alone, decoded without special tokens.

Request settings (a ``/predictions`` JSON object's keys or its ``parameters``, the query
string, or an infer request's ``parameters``): ``max_new_tokens`` (also ``max_tokens``),
``do_sample`` [false: greedy], ``temperature`` [1.0], ``top_k`` [50], ``top_p`` [1.0],
``repetition_penalty`` [1.0], ``seed`` (a sampling generator of the request's own),
``stop`` (a string or a list of strings).

``handler_config`` keys: ``max_new_tokens`` [64]: the default when a request names none;
``chat_template``: a Jinja chat template used by ``/v1/chat/completions`` when the tokenizer
has none (else ``DEFAULT_CHAT_TEMPLATE``).

``/predictions`` answers ``{"generated_text": ...}`` for one text (a list of them for a JSON
list); the protocol takes BYTES ``text_input`` ``[N]`` and answers BYTES ``text_output``
``[N]`` (the names of Triton's generate extension). The server runs these requests, and the
OpenAI-compatible ``/v1/completions`` and ``/v1/chat/completions``, through one generation
engine.

Needs ember-text (``pip install 'ember-serve[text]'``).
"""

from __future__ import annotations

import dataclasses
import secrets

import numpy as np

from ..config import TensorSpec
from ._text_stream import TextStream
from .base import InvalidInput, Request
from .text_classifier import max_positions
from .text_common import TextHandler

__all__ = ["TextGenerationHandler", "GenerationSettings", "DEFAULT_CHAT_TEMPLATE"]

# ChatML (as many instruction-tuned models use it): the template for tokenizers that carry none.
DEFAULT_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
DEFAULT_CHAT_STOP = "<|im_end|>"
SETTING_NAMES = {"max_new_tokens", "max_tokens", "do_sample", "temperature", "top_k", "top_p", "repetition_penalty",
                 "seed", "stop"}


@dataclasses.dataclass
class GenerationSettings:
    """How one sequence is generated; ``from_settings`` checks a request's values."""

    max_new_tokens: int = 64
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int | None = None
    stop: list = dataclasses.field(default_factory=list)

    @classmethod
    def from_settings(cls, settings: dict, default_max_new_tokens: int) -> GenerationSettings:
        """Raises InvalidInput naming the setting and what it must be."""
        unknown = sorted(set(settings) - SETTING_NAMES)
        if unknown:
            raise InvalidInput(f"unknown generation setting(s) {unknown}: expected some of {sorted(SETTING_NAMES)}")
        out = cls(max_new_tokens=default_max_new_tokens)
        if "max_new_tokens" in settings or "max_tokens" in settings:
            out.max_new_tokens = _int(settings.get("max_new_tokens", settings.get("max_tokens")), "max_new_tokens", 0)
        if "do_sample" in settings:
            out.do_sample = _bool(settings["do_sample"], "do_sample")
        if "temperature" in settings:
            out.temperature = _float(settings["temperature"], "temperature", 0.0)
            if out.do_sample and out.temperature == 0:
                raise InvalidInput("temperature must be > 0 when sampling (do_sample)")
        if "top_k" in settings:
            out.top_k = None if settings["top_k"] is None else _int(settings["top_k"], "top_k", 0)
        if "top_p" in settings:
            out.top_p = _float(settings["top_p"], "top_p", 0.0, 1.0)
        if "repetition_penalty" in settings:
            out.repetition_penalty = _float(settings["repetition_penalty"], "repetition_penalty", 0.0)
            if out.repetition_penalty == 0:
                raise InvalidInput("repetition_penalty must be > 0")
        if settings.get("seed") is not None:
            out.seed = _int(settings["seed"], "seed", None)
        out.stop = stop_list(settings.get("stop"))
        return out

    def generator(self):
        """A random generator of this request's own (seeded by ``seed``, else from the OS)."""
        import ember
        g = ember.Generator()
        g.manual_seed(self.seed if self.seed is not None else secrets.randbits(63))
        return g


def _number(value, name, kind):
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise InvalidInput(f"{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    return kind(value)


def _int(value, name, low):
    v = _number(value, name, int)
    if low is not None and v < low:
        raise InvalidInput(f"{name} must be >= {low}, got {v}")
    return v


def _float(value, name, low, high=None):
    v = _number(value, name, float)
    if v < low or (high is not None and v > high):
        raise InvalidInput(f"{name} must be in [{low}, {high if high is not None else 'inf'}], got {v}")
    return v


def _bool(value, name):
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    raise InvalidInput(f"{name} must be true or false, got {value!r}")


def stop_list(stop) -> list[str]:
    """``stop`` as a list of strings (None: none). Raises InvalidInput for anything else."""
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop]
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return list(stop)
    raise InvalidInput(f"stop must be a string or a list of strings, got {type(stop).__name__}")


class TextGenerationHandler(TextHandler):
    handler_name = "text_generation"
    input_name = "text_input"
    generates = True  # the server runs its requests through a generation engine

    def load(self, folder: str) -> None:
        super().load(folder)
        self.model = self.ember_text.models.AutoModelForCausalLM.from_pretrained(folder)
        hc = self.context.config.handler_config
        self.default_max_new_tokens = int(hc.get("max_new_tokens", 64))
        self.context_length = max_positions(self.tokenizer, self.model.config)
        eos = getattr(self.model.config, "eos_token_id", None)
        eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        if not eos and self.tokenizer.eos_token_id is not None:
            eos = [self.tokenizer.eos_token_id]
        self.eos_token_ids = eos
        self.chat_template = hc.get("chat_template")

    def signature(self):
        cfg = self.context.config
        if cfg.inputs or cfg.outputs:
            return list(cfg.inputs), list(cfg.outputs)
        return self.signature_inputs(), [TensorSpec("text_output", "BYTES", [-1])]

    # ---- prompts and settings -----------------------------------------------------------
    def prompt_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text)["input_ids"])

    def settings(self, request: Request) -> GenerationSettings:
        settings = self.parse(request).settings
        if request.kind == "infer":  # the protocol's own parameters (binary_data_output...) sit beside them
            settings = {k: v for k, v in settings.items() if k in SETTING_NAMES}
        return GenerationSettings.from_settings(settings, self.default_max_new_tokens)

    def check_length(self, prompt: list[int], settings: GenerationSettings, explicit: bool = True) -> None:
        """InvalidInput when the prompt and the tokens asked for exceed the model's positions;
        a default ``max_new_tokens`` (``explicit`` False) is shortened to fit instead."""
        if not prompt:
            raise InvalidInput("the prompt is empty (it has no tokens)")
        limit = self.context_length
        if limit is None:
            return
        if len(prompt) >= limit:
            raise InvalidInput(f"the prompt has {len(prompt)} tokens; this model's maximum context length is "
                               f"{limit} tokens")
        if len(prompt) + settings.max_new_tokens > limit:
            if not explicit:
                settings.max_new_tokens = limit - len(prompt)
                return
            raise InvalidInput(f"This model's maximum context length is {limit} tokens. However, you requested "
                               f"{len(prompt) + settings.max_new_tokens} tokens ({len(prompt)} in the prompt, "
                               f"{settings.max_new_tokens} for the completion). Please reduce the prompt or the "
                               "completion length.")

    def jobs(self, request: Request) -> list[tuple[list[int], GenerationSettings]]:
        """(prompt ids, settings) of each text of a ``/predictions`` or infer request."""
        settings = self.settings(request)
        out = []
        for text in self.parse(request).texts:
            s = dataclasses.replace(settings, stop=list(settings.stop))
            ids = self.prompt_ids(text)
            self.check_length(ids, s, explicit="max_new_tokens" in self.parse(request).settings
                              or "max_tokens" in self.parse(request).settings)
            out.append((ids, s))
        return out

    def answer(self, request: Request, texts: list[str]):
        """The answer of a ``/predictions`` or infer request from its generated texts."""
        if request.kind == "infer":
            return {"text_output": np.array([t.encode() for t in texts], dtype=object)}
        answers = [{"generated_text": t} for t in texts]
        return answers[0] if self.parse(request).single else answers

    # ---- generating without the server's engine (ember-archive check, tests) ------------
    def generate_one(self, prompt: list[int], settings: GenerationSettings) -> tuple[str, str, int]:
        """``(text, finish_reason, generated tokens)`` of one prompt, run alone with ``generate``."""
        import ember
        stream = TextStream(self.tokenizer, settings.stop)
        if settings.max_new_tokens == 0:
            return "", "length", 0
        sample = settings.do_sample and settings.temperature > 0
        out = self.model.generate(ember.tensor([prompt], dtype=ember.int64), max_new_tokens=settings.max_new_tokens,
                                  do_sample=sample, temperature=settings.temperature, top_k=settings.top_k,
                                  top_p=settings.top_p, repetition_penalty=settings.repetition_penalty,
                                  eos_token_id=self.eos_token_ids or None,
                                  generator=settings.generator() if sample else None)
        new = out[0, len(prompt):].tolist()
        reason, count = "length", 0
        for token in new:
            count += 1
            if token in self.eos_token_ids:
                reason = "stop"
                break
            stream.push(token)
            if stream.finish_reason:
                reason = "stop"
                break
        stream.flush()
        return stream.text, reason, count

    def preprocess(self, requests: list[Request]):
        return [self.jobs(r) for r in requests]

    def inference(self, jobs):
        return [[self.generate_one(ids, s)[0] for ids, s in per_request] for per_request in jobs]

    def postprocess(self, texts, requests: list[Request]) -> list:
        return [self.answer(r, t) for r, t in zip(requests, texts)]
