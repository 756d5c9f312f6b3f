"""Handlers: built-in names and ``module:Class`` handlers inside an archive.

Built-in handlers are imported only when a model asks for them, so that ``image_classifier``
needs ember-vision (``pip install ember-serve[vision]``) only where it is used, and the text
handlers (``text_classifier``, ``sentence_embedder``, ``text_generation``) need ember-text
(``ember-serve[text]``) and ``audio_classifier`` ember-audio (``ember-serve[audio]``) only there.
"""

from __future__ import annotations

import importlib

from .base import BaseHandler, HandlerContext, InvalidInput, Request

__all__ = ["BaseHandler", "HandlerContext", "InvalidInput", "Request", "BUILTIN_HANDLERS", "resolve_handler",
           "register_handler"]

BUILTIN_HANDLERS: dict[str, str | None] = {
    "tensor": "ember_serve.handlers.tensor:TensorHandler",
    "image_classifier": "ember_serve.handlers.image_classifier:ImageClassifierHandler",
    "text_classifier": "ember_serve.handlers.text_classifier:TextClassifierHandler",
    "sentence_embedder": "ember_serve.handlers.sentence_embedder:SentenceEmbedderHandler",
    "text_generation": "ember_serve.handlers.text_generation:TextGenerationHandler",
    "audio_classifier": "ember_serve.handlers.audio_classifier:AudioClassifierHandler",
}


def register_handler(name: str, target: str) -> None:
    """Make ``name`` a built-in handler name for ``target``, a ``"package.module:Class"`` string
    (imported when an archive asks for ``name``). Raises ValueError when ``target`` has no ``:``."""
    if ":" not in target:
        raise ValueError(f"handler target {target!r}: expected 'package.module:Class'")
    BUILTIN_HANDLERS[name] = target


def _import(target: str):
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def resolve_handler(spec: str, archive) -> type[BaseHandler]:
    """The handler class of ``spec``: a built-in name or ``module:Class`` inside ``archive``.

    Raises ValueError for a reserved name not available yet, a missing module or class, or a
    class that is not a BaseHandler."""
    if spec in BUILTIN_HANDLERS:
        target = BUILTIN_HANDLERS[spec]
        if target is None:
            raise ValueError(f"the built-in handler {spec!r} is not available in this version of ember-serve "
                             "(it comes with ember-text)")
        cls = _import(target)
    else:
        module, sep, name = spec.partition(":")
        if not sep:
            raise ValueError(f"handler {spec!r}: expected a built-in name ({', '.join(BUILTIN_HANDLERS)}) or "
                             "'module:Class'")
        cls = getattr(archive.import_module(module), name, None)
        if cls is None:
            raise ValueError(f"the archive's module {module!r} defines no {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, BaseHandler)):
        raise ValueError(f"handler {spec!r} is {cls!r}, not a subclass of ember_serve.handlers.BaseHandler")
    return cls
