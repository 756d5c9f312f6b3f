"""Generated token ids -> text deltas, with stop strings, for streaming and whole answers alike.

The generated ids are decoded together after each token (special tokens skipped, no
clean-up of spaces, so that a longer decode only ever extends a shorter one). A delta holds
back a trailing replacement character (an incomplete UTF-8 sequence whose next bytes are still
to come) and any tail that could begin a stop string; when a stop string appears the text ends
just before it. The concatenated deltas are the final text.
"""

from __future__ import annotations

__all__ = ["TextStream"]


class TextStream:
    """Feed ``push(token_id)`` for each generated token; ``flush()`` at the end.

    ``text`` is the answer so far (stop strings removed), ``finish_reason`` becomes "stop" once
    a stop string appeared (the caller stops generating)."""

    def __init__(self, tokenizer, stop: list[str] = ()):
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.ids: list[int] = []
        self.text = ""
        self.sent = 0
        self.finish_reason: str | None = None

    def _decode(self) -> str:
        return self.tokenizer.decode(self.ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    def push(self, token: int) -> str:
        """The text that became final with ``token`` (may be empty)."""
        if self.finish_reason is not None:
            return ""
        self.ids.append(int(token))
        text = self._decode()
        cut = min((i for i in (text.find(s) for s in self.stop) if i >= 0), default=-1)
        if cut >= 0:
            self.text, self.finish_reason = text[:cut], "stop"
            return self.flush()
        self.text = text
        safe = len(text.rstrip("\ufffd"))
        for s in self.stop:
            for k in range(min(len(s) - 1, safe), 0, -1):
                if text[:safe].endswith(s[:k]):
                    safe -= k
                    break
        if safe <= self.sent:
            return ""
        out, self.sent = text[self.sent:safe], safe
        return out

    def flush(self) -> str:
        """Whatever was held back: the answer is complete."""
        out, self.sent = self.text[self.sent:], len(self.text)
        return out
