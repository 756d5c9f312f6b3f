"""Sphinx extension: dataclass signatures that Sphinx can parse.

A dataclass field made with ``default_factory`` shows ``= <factory>`` in the class's signature,
which is not Python: Sphinx then falls back to splitting the signature on commas, so an
annotation such as ``dict[str, numpy.ndarray]`` is cut in two and its halves are looked up
as classes. Each ``<factory>`` becomes a call of the factory (``dict()``), what the field's
default is made by; a factory without a plain name (a lambda) becomes ``...``.
"""

from __future__ import annotations

import dataclasses

FACTORY = "<factory>"


def _factory_calls(cls) -> list[str]:
    """The replacement of each ``<factory>`` of ``cls``'s signature, in the fields' order."""
    calls = []
    for field in dataclasses.fields(cls):
        if field.init and field.default_factory is not dataclasses.MISSING:
            name = getattr(field.default_factory, "__name__", "")
            calls.append(f"{name}()" if name.isidentifier() else "...")
    return calls


def parseable_signature(app, what, name, obj, options, signature, return_annotation):
    if what != "class" or not signature or FACTORY not in signature or not dataclasses.is_dataclass(obj):
        return None
    calls = _factory_calls(obj)
    if signature.count(FACTORY) != len(calls):
        return None  # not the fields' defaults alone: leave it as it is
    for call in calls:
        signature = signature.replace(FACTORY, call, 1)
    return signature, return_annotation


def setup(app):
    app.connect("autodoc-process-signature", parseable_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
