"""The handler contract: a batch of requests in, one answer per request out.

A worker thread calls ``handle(requests)``, which runs ``preprocess`` (requests -> model
input), ``inference`` (the model, under ``ember.no_grad``) and ``postprocess`` (model output
-> one answer per request), as TorchServe's BaseHandler does. An answer is, for an Open
Inference Protocol request, a dict ``{output name: numpy array}`` whose first dimension is
the request's rows; for a ``/predictions`` request, anything JSON can encode (or ``bytes``).

A handler raises InvalidInput for a request it cannot read (the client gets 400); any other
exception is the handler's fault (500 with its message); the worker carries on either way.

Source: TorchServe's custom service contract, https://pytorch.org/serve/custom_service.html
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["Request", "HandlerContext", "BaseHandler", "InvalidInput"]


class InvalidInput(ValueError):
    """A request the handler cannot read; answered with 400 and this message."""


@dataclasses.dataclass
class Request:
    """One client request as a handler sees it.

    ``kind`` is ``"infer"`` (Open Inference Protocol: ``inputs`` maps input names to numpy
    arrays, in the request's order), ``"predict"`` (TorchServe style: ``body`` holds the raw
    bytes and ``content_type`` their media type) or ``"openai"`` (the ``/v1`` routes: ``parsed``
    holds the texts). ``rows`` is how many batch rows it adds. ``outputs`` lists the output
    names asked for (None: all). ``parsed`` keeps what a handler read from the request
    between ``rows`` and ``preprocess``. ``id`` is the request's id (the client's, or one the
    server made); ``parameters`` the request's free-form parameters (a dict)."""

    id: str
    kind: str
    inputs: dict[str, np.ndarray] | None = None
    body: bytes | None = None
    content_type: str = ""
    parameters: dict = dataclasses.field(default_factory=dict)
    outputs: list[str] | None = None
    rows: int = 1
    parsed: Any = None


@dataclasses.dataclass
class HandlerContext:
    """What ``initialize`` gets.

    Args:
        archive: the :class:`~ember_serve.archive.LoadedArchive` of the model.
        config: the effective :class:`~ember_serve.ModelConfig`.
        device: where the model runs (an ember device string).
        model_name, model_version: the served name and version.
        metrics_registry: a prometheus ``CollectorRegistry`` for the handler's own metrics (or None).
    """

    archive: Any
    config: Any
    device: str
    model_name: str
    model_version: str
    metrics_registry: Any = None


class BaseHandler:
    """Subclass and override ``preprocess``/``inference``/``postprocess`` (or ``handle``).

    ``initialize`` builds the archive's model (``self.model``) on the config's device.
    ``signature()`` returns ``(inputs, outputs)`` TensorSpecs used for metadata and input
    checks when the config declares none; ``rows(request)`` counts a request's batch rows."""

    def __init__(self):
        self.context: HandlerContext | None = None
        self.model = None

    def initialize(self, context: HandlerContext) -> None:
        self.context = context
        if context.archive.manifest.get("model"):
            self.model = context.archive.build_model(context.device)

    def signature(self):
        cfg = self.context.config
        return list(cfg.inputs), list(cfg.outputs)

    def rows(self, request: Request) -> int:
        if request.kind == "infer" and request.inputs and self.context.config.max_batch_size > 0:
            first = next(iter(request.inputs.values()))
            return int(first.shape[0]) if first.ndim else 1
        return 1

    def preprocess(self, requests: list[Request]) -> Any:
        raise NotImplementedError

    def inference(self, batch: Any) -> Any:
        import ember
        with ember.no_grad():
            return self.model(*batch) if isinstance(batch, (tuple, list)) else self.model(batch)

    def postprocess(self, outputs: Any, requests: list[Request]) -> list:
        raise NotImplementedError

    def handle(self, requests: list[Request]) -> list:
        return self.postprocess(self.inference(self.preprocess(requests)), requests)

    def close(self) -> None:
        """Called when the model is unloaded."""
