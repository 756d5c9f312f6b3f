"""Streamers: receive token ids as ``generate`` makes them and turn them into text (transformers' streamers).

Text is released word by word: up to the last space, a whole line at a newline, and every
character of CJK text, so that a multi-byte or multi-token word is never cut.
"""

from __future__ import annotations

import queue


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class TextStreamer:
    """Prints the text as it comes (``on_finalized_text``); ``skip_prompt`` leaves out the prompt.

    Args:
        tokenizer: what decodes the ids (``decode(ids, **decode_kwargs)``).
        decode_kwargs: e.g. ``skip_special_tokens=True``.

    Raises:
        ValueError: ``put`` of a batch with more than one sequence.
    """

    def __init__(self, tokenizer, skip_prompt: bool = False, **decode_kwargs):
        self.tokenizer = tokenizer
        self.skip_prompt = skip_prompt
        self.decode_kwargs = decode_kwargs
        self.token_cache: list[int] = []
        self.print_len = 0
        self.next_tokens_are_prompt = True

    def put(self, value) -> None:
        if value.ndim > 1 and value.shape[0] > 1:
            raise ValueError("TextStreamer only supports batch size 1")
        if value.ndim > 1:
            value = value[0]
        if self.skip_prompt and self.next_tokens_are_prompt:
            self.next_tokens_are_prompt = False
            return
        self.next_tokens_are_prompt = False
        self.token_cache.extend(int(t) for t in value.tolist())
        text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
        if text.endswith("\n"):
            printable = text[self.print_len:]
            self.token_cache = []
            self.print_len = 0
        elif text and _is_cjk(ord(text[-1])):
            printable = text[self.print_len:]
            self.print_len += len(printable)
        else:
            printable = text[self.print_len: text.rfind(" ") + 1]
            self.print_len += len(printable)
        self.on_finalized_text(printable)

    def end(self) -> None:
        if self.token_cache:
            text = self.tokenizer.decode(self.token_cache, **self.decode_kwargs)
            printable = text[self.print_len:]
        else:
            printable = ""
        self.token_cache = []
        self.print_len = 0
        self.next_tokens_are_prompt = True
        self.on_finalized_text(printable, stream_end=True)

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        print(text, flush=True, end="" if not stream_end else None)


class TextIteratorStreamer(TextStreamer):
    """Yields the text pieces; run ``generate`` in a thread and iterate in the caller
    (transformers' ``TextIteratorStreamer``).

    Args:
        tokenizer: decodes the generated ids (``decode``, with ``decode_kwargs``).
        skip_prompt: leave the prompt's text out of the stream.
        timeout: seconds a ``next`` waits for a piece before raising ``queue.Empty``
            (None: forever).
    """

    def __init__(self, tokenizer, skip_prompt: bool = False, timeout: float | None = None, **decode_kwargs):
        super().__init__(tokenizer, skip_prompt, **decode_kwargs)
        self.text_queue: queue.Queue = queue.Queue()
        self.stop_signal = None
        self.timeout = timeout

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        self.text_queue.put(text, timeout=self.timeout)
        if stream_end:
            self.text_queue.put(self.stop_signal, timeout=self.timeout)

    def __iter__(self):
        return self

    def __next__(self) -> str:
        value = self.text_queue.get(timeout=self.timeout)
        if value == self.stop_signal:
            raise StopIteration()
        return value
