"""OpenAI-compatible routes on the inference port: ``/v1/models``, ``/v1/completions``,
``/v1/chat/completions`` (``text_generation`` archives) and ``/v1/embeddings``
(``sentence_embedder`` archives), so that OpenAI's client libraries work unchanged.

The ``model`` of a request is a served model's name (its default version). Sampling follows
the API: ``temperature`` [1.0] (0: greedy), ``top_p`` [1.0], no top-k; ``seed`` gives a
request reproducible samples (choice ``i`` of ``n`` uses ``seed + i``); ``stop`` (up to 4
strings) ends a choice before the stop string; ``max_tokens`` [16 for completions; for chat
the handler's ``max_new_tokens``, within the context]. ``stream: true`` answers server-sent
events, one chunk per piece of text, ending with ``data: [DONE]``; ``stream_options:
{"include_usage": true}`` adds a last chunk holding ``usage``. Arguments the server does
not implement (``logprobs``, ``best_of`` > 1, ``logit_bias``, ``suffix``, non-zero
``presence_penalty``/``frequency_penalty``, ``tools``) are refused with 400, as are unknown ones.

Errors are OpenAI's ``{"error": {"message", "type", "param", "code"}}`` with its status codes:
400 ``invalid_request_error``, 404 an unknown model (code ``model_not_found``), 413 a body too
large, 503 a full queue, 504 a timeout, 500 ``server_error``. An error after a stream began
is sent as an ``error`` event before ``[DONE]``.

Source: https://platform.openai.com/docs/api-reference (completions, chat, embeddings, models).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid

import numpy as np
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from ..handlers import InvalidInput, Request
from ..handlers.text_common import ParsedTexts
from .errors import read_body, status_of
from .registry import ModelNotFound

__all__ = ["openai_routes"]

access = logging.getLogger("ember_serve.access")
_TYPES = {400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error",
          503: "server_error", 504: "timeout"}
COMMON = {"model", "stream", "stream_options", "user", "n", "max_tokens", "temperature", "top_p", "stop", "seed",
          "presence_penalty", "frequency_penalty", "logit_bias", "logprobs"}
COMPLETION_KEYS = COMMON | {"prompt", "echo", "best_of", "suffix"}
CHAT_KEYS = COMMON | {"messages", "max_completion_tokens", "top_logprobs", "response_format", "tools", "tool_choice",
                      "parallel_tool_calls", "metadata", "store", "service_tier", "reasoning_effort", "modalities"}
EMBEDDING_KEYS = {"model", "input", "encoding_format", "dimensions", "user"}


class OpenAIError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def _error_body(exc: BaseException) -> tuple[int, dict, dict]:
    if isinstance(exc, OpenAIError):
        status, message, headers, param, code = exc.status, exc.message, {}, exc.param, exc.code
    else:
        status, message, headers = status_of(exc)
        param, code = None, ("model_not_found" if isinstance(exc, ModelNotFound) else None)
    kind = _TYPES.get(status, "server_error")
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, headers


def _bad(message: str, param: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, param)


def _number(body: dict, key: str, default, low, high, kind=float):
    v = body.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and not isinstance(v, int)):
        raise _bad(f"'{key}' must be {'an integer' if kind is int else 'a number'}, got {v!r}", key)
    if (low is not None and v < low) or (high is not None and v > high):
        raise _bad(f"{v} is not a valid value for '{key}': expected {low} to {high if high is not None else 'any'}",
                   key)
    return kind(v)


def _check_keys(body: dict, allowed: set) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise _bad(f"Unrecognized request argument supplied: {', '.join(unknown)}", unknown[0])
    if body.get("logprobs") not in (None, False):
        raise _bad("logprobs are not supported by this server", "logprobs")
    if body.get("top_logprobs") is not None:
        raise _bad("top_logprobs are not supported by this server", "top_logprobs")
    if body.get("logit_bias"):
        raise _bad("logit_bias is not supported by this server", "logit_bias")
    if body.get("tools"):
        raise _bad("tools are not supported by this server", "tools")
    for key in ("presence_penalty", "frequency_penalty"):
        if _number(body, key, 0.0, -2.0, 2.0):
            raise _bad(f"a non-zero {key} is not supported by this server", key)
    if body.get("best_of") not in (None, 1):
        raise _bad("best_of > 1 is not supported by this server", "best_of")
    if body.get("suffix") is not None:
        raise _bad("suffix is not supported by this server", "suffix")
    fmt = body.get("response_format")
    if fmt is not None and (not isinstance(fmt, dict) or fmt.get("type") != "text"):
        raise _bad("only response_format {'type': 'text'} is supported", "response_format")


def openai_routes(state) -> list[Route]:
    registry, metrics = state.registry, state.metrics
    limit = registry.default_max_request_bytes or 64 * 1024 * 1024

    def finish_log(request, rid, status, start, served):
        if served is not None:
            served.record(status == 200, time.perf_counter() - start)
            metrics.count_request(served.name, "openai", status)
        access.info("%s %s %s %d %.1fms model=%s", rid, request.method, request.url.path, status,
                    (time.perf_counter() - start) * 1e3, served.name if served is not None else "")

    def error_response(exc, rid, request, start, served):
        status, body, headers = _error_body(exc)
        finish_log(request, rid, status, start, served)
        return JSONResponse(body, status_code=status, headers={**headers, "X-Request-ID": rid})

    async def read_json(request) -> dict:
        raw = await read_body(request, limit)
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise _bad(f"the body is not valid JSON: {e}") from None
        if not isinstance(body, dict):
            raise _bad(f"the body must be a JSON object, got {type(body).__name__}")
        return body

    def model_of(body: dict, want: str):
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise _bad("you must provide a model parameter", "model")
        try:
            m = registry.get(name)
        except ModelNotFound:
            raise OpenAIError(404, f"The model '{name}' does not exist", "model", "model_not_found") from None
        handler = m.archive.handler
        if handler != want and not (want == "text_generation" and m.engine is not None):
            raise _bad(f"model '{name}' is a {handler!r} model; this route needs a {want} model", "model")
        return m

    def model_card(m) -> dict:
        return {"id": m.name, "object": "model", "created": int(m.loaded_at), "owned_by": "ember-serve"}

    def openai_models():
        return [m for m in (registry.get(n) for n in registry.names())
                if m.engine is not None or m.archive.handler == "sentence_embedder"]

    async def list_models(request):
        return JSONResponse({"object": "list", "data": [model_card(m) for m in openai_models()]})

    async def get_model(request):
        name = request.path_params["model"]
        for m in openai_models():
            if m.name == name:
                return JSONResponse(model_card(m))
        status, body, _ = _error_body(OpenAIError(404, f"The model '{name}' does not exist", "model",
                                                  "model_not_found"))
        return JSONResponse(body, status_code=status)

    # ---- generation ---------------------------------------------------------------------
    def sampling(body: dict, m, prompt: list[int], max_tokens, explicit: bool, seed_offset: int, stop: list):
        from ..handlers.text_generation import GenerationSettings
        temperature = _number(body, "temperature", 1.0, 0.0, 2.0)
        top_p = _number(body, "top_p", 1.0, 0.0, 1.0)
        seed = _number(body, "seed", None, None, None, int)
        s = GenerationSettings(max_new_tokens=max_tokens, do_sample=temperature > 0, temperature=temperature or 1.0,
                               top_k=None, top_p=top_p, seed=None if seed is None else seed + seed_offset,
                               stop=list(stop))
        m.handler.check_length(prompt, s, explicit=explicit)
        return s

    def stops(body: dict, extra=()) -> list[str]:
        from ..handlers.text_generation import stop_list
        try:
            out = stop_list(body.get("stop"))
        except InvalidInput as e:
            raise _bad(str(e), "stop") from None
        if len(out) > 4:
            raise _bad(f"at most 4 stop sequences are allowed, got {len(out)}", "stop")
        return out + [s for s in extra if s not in out]

    def prompts_of(body: dict, m) -> list[tuple[list[int], str]]:
        p = body.get("prompt")
        tok = m.handler.tokenizer
        if isinstance(p, str):
            return [(m.handler.prompt_ids(p), p)]
        if isinstance(p, list) and p:
            if all(isinstance(x, str) for x in p):
                return [(m.handler.prompt_ids(x), x) for x in p]
            if all(isinstance(x, int) and not isinstance(x, bool) for x in p):
                return [(list(p), tok.decode(p))]
            if all(isinstance(x, list) and x and all(isinstance(t, int) for t in x) for x in p):
                return [(list(x), tok.decode(x)) for x in p]
        raise _bad("'prompt' must be a string, a list of strings, a list of token ids or a list of such lists",
                   "prompt")

    def chat_prompt(body: dict, m) -> tuple[list[int], list[str]]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _bad("'messages' must be a non-empty list of messages", "messages")
        chat = []
        for i, msg in enumerate(messages):
            if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
                raise _bad(f"messages[{i}] must be an object with a 'role'", f"messages.[{i}]")
            content = msg.get("content")
            if isinstance(content, list):
                parts = []
                for part in content:
                    if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"),
                                                                                                    str):
                        raise _bad(f"messages[{i}]: only text content parts are supported", f"messages.[{i}].content")
                    parts.append(part["text"])
                content = "".join(parts)
            elif content is None:
                content = ""
            elif not isinstance(content, str):
                raise _bad(f"messages[{i}].content must be a string or a list of text parts",
                           f"messages.[{i}].content")
            chat.append({"role": msg["role"], "content": content})
        h = m.handler
        from ..handlers.text_generation import DEFAULT_CHAT_STOP, DEFAULT_CHAT_TEMPLATE
        template, extra = None, []
        if h.tokenizer.chat_template is None:
            template = h.chat_template or DEFAULT_CHAT_TEMPLATE
            extra = [DEFAULT_CHAT_STOP] if h.chat_template is None else []
        try:
            text = h.tokenizer.apply_chat_template(chat, chat_template=template, add_generation_prompt=True,
                                                   tokenize=False)
        except Exception as e:  # jinja2's TemplateError: the template refused the conversation
            raise _bad(f"the chat template cannot render these messages: {type(e).__name__}: {e}",
                       "messages") from None
        ids = list(h.tokenizer(text, add_special_tokens=False)["input_ids"])
        return ids, extra

    def specs_for(body, m, prompts, default_max, n, stop):
        explicit = body.get("max_tokens") is not None or body.get("max_completion_tokens") is not None
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        max_tokens = default_max if max_tokens is None else _number({"max_tokens": max_tokens}, "max_tokens", 0, 0,
                                                                    None, int)
        specs = []
        for prompt in prompts:
            for i in range(n):
                try:
                    specs.append((prompt, sampling(body, m, prompt, max_tokens, explicit, i, stop)))
                except InvalidInput as e:
                    raise _bad(str(e), "max_tokens" if "context length" in str(e) else "prompt") from None
        return specs

    def usage(prompt_tokens: int, completion_tokens: int) -> dict:
        return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens}

    async def generation(request, chat: bool):
        start = time.perf_counter()
        rid = request.headers.get("x-request-id") or uuid.uuid4().hex
        m = None
        try:
            body = await read_json(request)
            _check_keys(body, CHAT_KEYS if chat else COMPLETION_KEYS)
            m = model_of(body, "text_generation")
            n = _number(body, "n", 1, 1, 16, int)
            stream = body.get("stream") or False
            if not isinstance(stream, bool):
                raise _bad("'stream' must be true or false", "stream")
            options = body.get("stream_options") or {}
            if not isinstance(options, dict):
                raise _bad("'stream_options' must be an object", "stream_options")
            include_usage = bool(options.get("include_usage"))
            if chat:
                ids, extra_stop = chat_prompt(body, m)
                prompts, texts = [ids], [""]
                specs = specs_for(body, m, prompts, m.handler.default_max_new_tokens, n, stops(body, extra_stop))
            else:
                pairs = prompts_of(body, m)
                prompts, texts = [p for p, _ in pairs], [t for _, t in pairs]
                for p in prompts:
                    if not p:
                        raise _bad("the prompt is empty (it has no tokens)", "prompt")
                specs = specs_for(body, m, prompts, 16, n, stops(body))
            echo = bool(body.get("echo")) and not chat
            prompt_tokens = sum(len(p) for p in prompts)
            # start now, so that a full queue is refused before any answer is sent
            events = m.generate(specs)
            first = await events.__anext__()
        except Exception as e:
            return error_response(e, rid, request, start, m)
        created = int(time.time())
        cid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        obj = "chat.completion" if chat else "text_completion"

        async def all_events():
            yield first
            async for event in events:
                yield event

        if not stream:
            outs = [""] * len(specs)
            reasons, counts = [None] * len(specs), [0] * len(specs)

            async def collect():
                async for index, kind, value in all_events():
                    if kind == "text":
                        outs[index] += value
                    elif kind == "done":
                        reasons[index], counts[index] = value
                    else:
                        raise value
            try:
                await asyncio.wait_for(collect(), m.config.response_timeout_s)
            except asyncio.TimeoutError:
                await events.aclose()
                return error_response(TimeoutError(f"model {m.name} gave no answer within "
                                                   f"{m.config.response_timeout_s:g} s"), rid, request, start, m)
            except Exception as e:
                await events.aclose()
                return error_response(e, rid, request, start, m)
            choices = []
            for i, (text, reason) in enumerate(zip(outs, reasons)):
                if chat:
                    choices.append({"index": i, "message": {"role": "assistant", "content": text},
                                    "logprobs": None, "finish_reason": reason})
                else:
                    shown = (texts[i // n] + text) if echo else text
                    choices.append({"index": i, "text": shown, "logprobs": None, "finish_reason": reason})
            finish_log(request, rid, 200, start, m)
            return JSONResponse({"id": cid, "object": obj, "created": created, "model": m.name, "choices": choices,
                                 "usage": usage(prompt_tokens, sum(counts)), "system_fingerprint": None},
                                headers={"X-Request-ID": rid})

        chunk_obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(index, piece=None, reason=None, role=False):
            if chat:
                delta = {"role": "assistant", "content": ""} if role else ({"content": piece} if piece is not None
                                                                           else {})
                choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": reason}
            else:
                choice = {"index": index, "text": piece or "", "logprobs": None, "finish_reason": reason}
            d = {"id": cid, "object": chunk_obj, "created": created, "model": m.name, "choices": [choice],
                 "system_fingerprint": None}
            if include_usage:
                d["usage"] = None
            return "data: " + json.dumps(d, separators=(",", ":")) + "\n\n"

        async def sse():
            status, completion = 200, 0
            try:
                for i in range(len(specs)):
                    if chat:
                        yield chunk(i, role=True)
                    elif echo:
                        yield chunk(i, texts[i // n])
                async for index, kind, value in all_events():
                    if kind == "text":
                        yield chunk(index, value)
                    elif kind == "done":
                        completion += value[1]
                        yield chunk(index, reason=value[0])
                    else:
                        raise value
                if include_usage:
                    d = {"id": cid, "object": chunk_obj, "created": created, "model": m.name, "choices": [],
                         "usage": usage(prompt_tokens, completion), "system_fingerprint": None}
                    yield "data: " + json.dumps(d, separators=(",", ":")) + "\n\n"
            except Exception as e:
                status, err, _ = _error_body(e)
                yield "data: " + json.dumps(err) + "\n\n"
            finally:
                await events.aclose()
                finish_log(request, rid, status, start, m)
            yield "data: [DONE]\n\n"

        return StreamingResponse(sse(), media_type="text/event-stream",
                                 headers={"X-Request-ID": rid, "Cache-Control": "no-cache"})

    async def completions(request):
        return await generation(request, chat=False)

    async def chat_completions(request):
        return await generation(request, chat=True)

    # ---- embeddings ---------------------------------------------------------------------
    async def embeddings(request):
        start = time.perf_counter()
        rid = request.headers.get("x-request-id") or uuid.uuid4().hex
        m = None
        try:
            body = await read_json(request)
            _check_keys(body, EMBEDDING_KEYS)
            m = model_of(body, "sentence_embedder")
            value = body.get("input")
            if isinstance(value, str):
                texts = [value]
            elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                texts = list(value)
            else:
                raise _bad("'input' must be a string or a non-empty list of strings (token ids are not supported)",
                           "input")
            fmt = body.get("encoding_format") or "float"
            if fmt not in ("float", "base64"):
                raise _bad(f"encoding_format must be 'float' or 'base64', got {fmt!r}", "encoding_format")
            dim = m.handler.dimension
            if body.get("dimensions") is not None and body["dimensions"] != dim:
                raise _bad(f"this model's embeddings have {dim} dimensions; 'dimensions' {body['dimensions']} "
                           "cannot be given", "dimensions")
            answer = await m.submit(Request(id=rid, kind="openai", parsed=ParsedTexts(texts, False)))
        except Exception as e:
            return error_response(e, rid, request, start, m)
        data = []
        for i, row in enumerate(answer["embeddings"]):
            row = np.asarray(row, dtype="<f4")
            emb = base64.b64encode(row.tobytes()).decode() if fmt == "base64" else row.tolist()
            data.append({"object": "embedding", "embedding": emb, "index": i})
        tokens = int(sum(answer["tokens"]))
        finish_log(request, rid, 200, start, m)
        return JSONResponse({"object": "list", "data": data, "model": m.name,
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}, headers={"X-Request-ID": rid})

    return [Route("/v1/models", list_models), Route("/v1/models/{model:path}", get_model),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"])]
