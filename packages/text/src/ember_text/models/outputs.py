"""Model outputs: dicts whose fields are also attributes and, in order, tuple items (transformers.ModelOutput)."""

from __future__ import annotations

from collections import OrderedDict


class ModelOutput(OrderedDict):
    """``out.logits``, ``out["logits"]`` and ``out[0]`` all reach the same field; None fields are left out.

    Integer (and slice) indexing runs over the fields that are set, in declaration order, as
    transformers' ``to_tuple()`` does.
    """

    _fields: tuple[str, ...] = ()

    def __init__(self, **kwargs):
        super().__init__()
        unknown = set(kwargs) - set(self._fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}; fields: {list(self._fields)}")
        for name in self._fields:
            value = kwargs.get(name)
            if value is not None:
                super().__setitem__(name, value)

    def __getattr__(self, name):
        if name in type(self)._fields:
            return self.get(name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in type(self)._fields:
            if value is None:
                self.pop(name, None)
            else:
                super().__setitem__(name, value)
        else:
            super().__setattr__(name, value)

    def __getitem__(self, key):
        if isinstance(key, str):
            return super().__getitem__(key)
        return self.to_tuple()[key]

    def to_tuple(self) -> tuple:
        return tuple(self[name] for name in self._fields if name in self)


def _output(name: str, fields: tuple[str, ...], doc: str):
    return type(name, (ModelOutput,), {"_fields": fields, "__doc__": doc})


BaseModelOutputWithPoolingAndCrossAttentions = _output(
    "BaseModelOutputWithPoolingAndCrossAttentions",
    ("last_hidden_state", "pooler_output", "hidden_states", "past_key_values", "attentions", "cross_attentions"),
    "An encoder's output: last_hidden_state ``[batch, seq, hidden]``, pooler_output ``[batch, hidden]``.")
BaseModelOutputWithPast = _output(
    "BaseModelOutputWithPast", ("last_hidden_state", "past_key_values", "hidden_states", "attentions"),
    "A decoder's output: last_hidden_state ``[batch, seq, hidden]`` and the cache.")
CausalLMOutputWithPast = _output(
    "CausalLMOutputWithPast", ("loss", "logits", "past_key_values", "hidden_states", "attentions"),
    "A language model's output: logits ``[batch, seq, vocab]``, the cache, the loss when labels are given.")
SequenceClassifierOutput = _output(
    "SequenceClassifierOutput", ("loss", "logits", "hidden_states", "attentions"),
    "A classifier's output: logits ``[batch, num_labels]``, the loss when labels are given.")
