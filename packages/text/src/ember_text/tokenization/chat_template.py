"""Rendering chat templates: Jinja2 in its immutable sandbox, with the globals transformers gives templates.

A chat template is the Jinja2 text in ``tokenizer_config.json``'s ``chat_template`` (or a
``chat_template.jinja`` file beside it). It is rendered as transformers renders it
(``transformers.utils.chat_template_utils``): ``ImmutableSandboxedEnvironment`` with
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``tojson`` filter that
keeps non-ASCII text, the ``raise_exception`` and ``strftime_now`` globals, and the
``{% generation %}...{% endgeneration %}`` block that marks what the assistant wrote (for
``return_assistant_tokens_mask``). The sandbox keeps a template from reaching Python
internals; nothing in a template can run code.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from datetime import datetime
from functools import lru_cache

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

# while a render tracks generation blocks: (the text yielded so far, the spans found)
_TRACKING: ContextVar = ContextVar("generation_spans", default=None)


class _GenerationBlocks(jinja2.ext.Extension):
    """``{% generation %}body{% endgeneration %}``: renders the body, and while a render
    tracks them records its character span in the output (transformers' template tag)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render_block"), [], [], body).set_lineno(lineno)

    def _render_block(self, caller):
        text = caller()
        tracking = _TRACKING.get()
        if tracking is not None:
            pieces, spans = tracking
            start = sum(len(p) for p in pieces)  # what the template has yielded before this block
            spans.append((start, start + len(text)))
        return text


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # Jinja's own tojson escapes HTML characters and forces ASCII; chat templates want the text as is.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


@lru_cache(maxsize=32)
def compile_template(source: str) -> jinja2.Template:
    """The compiled template for ``source`` (cached: templates are long and reused call after call)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_GenerationBlocks, "jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(source)


def select_template(chat_template, default, tools=None) -> str:
    """The template text to use: ``chat_template`` (a text, or the name of one), else the tokenizer's.

    A tokenizer may carry several named templates (a dict, or the list of ``{"name", "template"}``
    that tokenizer_config.json stores); "tool_use" is preferred when tools are given, else "default".

    Raises:
        ValueError: no template is available, or a name that is not among the tokenizer's templates.
    """
    templates = default
    if isinstance(templates, list):
        templates = {t["name"]: t["template"] for t in templates}
    if isinstance(templates, dict):
        if chat_template is not None and chat_template in templates:
            return templates[chat_template]
        if chat_template is None:
            if tools is not None and "tool_use" in templates:
                return templates["tool_use"]
            if "default" in templates:
                return templates["default"]
            raise ValueError(f"This tokenizer has several chat templates ({sorted(templates)}) and none named "
                             "'default'; pass chat_template= with the name of one.")
    if chat_template is not None:
        return chat_template
    if templates is None:
        raise ValueError("Cannot use chat template functions because tokenizer.chat_template is not set and no "
                         "template argument was passed! For information about writing templates and setting the "
                         "tokenizer.chat_template attribute, please see the documentation at "
                         "https://huggingface.co/docs/transformers/main/en/chat_templating")
    return templates


def render(template: str, conversation: list, **variables) -> str:
    """``template`` rendered with ``messages=conversation`` and the other variables."""
    if not isinstance(conversation, (list, tuple)) or not all(isinstance(m, dict) for m in conversation):
        raise TypeError(f"a conversation must be a list of message dicts ({{'role': ..., 'content': ...}}), "
                        f"got {type(conversation).__name__}")
    return compile_template(template).render(messages=list(conversation), **variables)


def render_with_spans(template: str, conversation: list, **variables) -> tuple:
    """``(text, spans)``: ``template`` rendered, and the ``(start, end)`` character spans of its
    ``{% generation %}`` blocks, in order."""
    pieces, spans = [], []
    token = _TRACKING.set((pieces, spans))
    try:
        for piece in compile_template(template).generate(messages=list(conversation), **variables):
            pieces.append(piece)
    finally:
        _TRACKING.reset(token)
    return "".join(pieces), spans


def assistant_mask(offsets, spans) -> list:
    """1 for each token whose ``(start, end)`` characters overlap a generation span, else 0
    (a span cut by truncation keeps the tokens left of it, as transformers marks them)."""
    mask, k = [0] * len(offsets), 0
    for i, (start, end) in enumerate(offsets):
        while k < len(spans) and start >= spans[k][1]:
            k += 1
        if k == len(spans):
            break
        if end > spans[k][0]:
            mask[i] = 1
    return mask


_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def render_chat(template: str, chat: list, continue_final_message=False, track_generation=False, **variables):
    """One conversation rendered; with ``continue_final_message`` the text stops right after the last message.

    The final message is marked with a tag before rendering and the text cut at the tag, as
    transformers 5 does, so the template's closing tokens for that turn are left out.

    With ``track_generation`` returns ``(text, spans of the {% generation %} blocks)``.

    Raises:
        TypeError: a message that is not a dict. ValueError: the final message (or the field to
        continue) is missing, or the template dropped it.
    """
    if not isinstance(chat, (list, tuple)):
        raise TypeError(f"a conversation must be a list of message dicts, got {type(chat).__name__}")
    messages = []
    for m in chat:
        if not isinstance(m, dict):
            raise TypeError(f"Chat messages should be dicts, but got {m!r}.")
        messages.append({k: v for k, v in m.items() if v is not None})  # transformers drops None fields
    final = None
    if continue_final_message:
        if not messages:
            raise ValueError("continue_final_message is set but the conversation is empty!")
        field = continue_final_message if isinstance(continue_final_message, str) else "content"
        final = messages[-1].get(field)
        if final is None:
            raise ValueError(f'continue_final_message is set but the final message has no "{field}" to continue!')
        if field not in template:
            raise ValueError(f'continue_final_message is set to "{field}" but this is not an accepted field in the '
                             "chat_template")
        last = dict(messages[-1])
        if isinstance(final, (list, tuple)):
            blocks = [dict(b) for b in final]
            for block in reversed(blocks):
                if "text" in block:
                    final = block["text"]
                    block["text"] = block["text"] + _CONTINUE_TAG
                    break
            else:
                raise ValueError("continue_final_message is set but we could not find any text to continue in the "
                                 "final message!")
            last[field] = blocks
        else:
            last[field] = final + _CONTINUE_TAG
        messages[-1] = last
    if track_generation:
        return render_with_spans(template, messages, **variables)
    text = render(template, messages, **variables)
    if continue_final_message:
        tag = _CONTINUE_TAG.strip()
        if final.strip() not in text or tag not in text:
            raise ValueError("continue_final_message is set but the final message does not appear in the chat after "
                             "applying the chat template! This can happen if the chat template deletes portions of "
                             "the final message. Please verify the chat template and final message in your chat to "
                             "ensure they are compatible.")
        loc = text.rindex(tag)
        text = text[:loc] if text[loc:loc + len(_CONTINUE_TAG)] == _CONTINUE_TAG else text[:loc].rstrip()
    return text
