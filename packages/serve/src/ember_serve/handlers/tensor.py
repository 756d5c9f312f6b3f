"""The ``tensor`` handler: protocol tensors in, ``forward``'s tensors out.

Inputs go to ``forward`` positionally, in the config's input order (``input__0``..), or in
the request's order when the config declares none. With batching (``max_batch_size`` > 0)
the requests of a batch are concatenated along dimension 0 and each output is split back
by rows. BYTES inputs reach ``forward`` as numpy object arrays of ``bytes`` (ember tensors
hold numbers only). Outputs are named as in the config, else ``output__0``.. (a dict
returned by ``forward`` keeps its keys).

``/predictions`` takes a JSON body: a (nested) list for a model with one input, or an object
``{input name: list}``; the datatype is the config's (FP32 when it declares none). It answers
the output as a nested list, or ``{output name: list}`` when there are several.
"""

from __future__ import annotations

import json

import numpy as np

from ..archive.signature import outputs_as_list
from ..datatypes import DATATYPES
from .base import BaseHandler, InvalidInput, Request

__all__ = ["TensorHandler"]

_EMBER_KINDS = {"BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BF16"}


def _to_model(arr: np.ndarray, name: str):
    import ember

    from ..datatypes import datatype_of
    dt = datatype_of(arr.dtype)
    if dt == "BYTES":
        return arr
    if dt not in _EMBER_KINDS:
        raise InvalidInput(f"input {name!r}: ember has no {dt} tensors; send one of {sorted(_EMBER_KINDS)}")
    return ember.from_numpy(np.require(arr, requirements=["C", "W"]))


class TensorHandler(BaseHandler):
    def _input_names(self, request: Request) -> list[str]:
        specs = self.context.config.inputs
        return [s.name for s in specs] if specs else list(request.inputs)

    def _predict_inputs(self, request: Request) -> dict[str, np.ndarray]:
        try:
            body = json.loads(request.body or b"")
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InvalidInput(f"the body must be JSON (a list, or an object of input name -> list): {e}") from None
        specs = {s.name: s for s in self.context.config.inputs}
        if isinstance(body, list):
            names = list(specs) or ["input__0"]
            if len(names) != 1:
                raise InvalidInput(f"the model takes {len(names)} inputs {names}; send an object of name -> list")
            body = {names[0]: body}
        if not isinstance(body, dict):
            raise InvalidInput(f"the body must be a JSON list or object, got {type(body).__name__}")
        out = {}
        for name, value in body.items():
            if specs and name not in specs:
                raise InvalidInput(f"unknown input {name!r}: the model takes {list(specs)}")
            datatype = specs[name].datatype if name in specs else "FP32"
            try:
                arr = np.array(value, dtype=DATATYPES[datatype] if datatype != "BYTES" else object)
            except (ValueError, TypeError) as e:
                raise InvalidInput(f"input {name!r}: not a rectangular list of {datatype}: {e}") from None
            if specs and not specs[name].matches(arr.shape):
                raise InvalidInput(f"input {name!r}: shape {list(arr.shape)} does not match {specs[name].shape}")
            out[name] = arr
        missing = [n for n in specs if n not in out]
        if missing:
            raise InvalidInput(f"missing input(s) {missing}")
        return out

    def rows(self, request: Request) -> int:
        if request.kind == "predict":
            request.inputs = self._predict_inputs(request)
            if self.context.config.max_batch_size > 0:
                first = next(iter(request.inputs.values()))
                return int(first.shape[0]) if first.ndim else 1
            return 1
        return super().rows(request)

    def preprocess(self, requests: list[Request]):
        names = self._input_names(requests[0])
        for r in requests:
            if r.inputs is None:
                r.inputs = self._predict_inputs(r)
        if len(requests) == 1:
            return [_to_model(requests[0].inputs[n], n) for n in names]
        return [_to_model(np.concatenate([r.inputs[n] for r in requests], axis=0), n) for n in names]

    def postprocess(self, outputs, requests: list[Request]) -> list:
        import ember
        spec_names = [s.name for s in self.context.config.outputs]
        named = []
        for i, (name, value) in enumerate(outputs_as_list(outputs)):
            if not isinstance(value, ember.Tensor):
                raise TypeError(f"forward returned {type(value).__name__} for output {i}; expected tensors")
            if not isinstance(outputs, dict) and i < len(spec_names):
                name = spec_names[i]
            named.append((name, value.detach().cpu().numpy()))
        total = sum(r.rows for r in requests)
        if len(requests) > 1:
            for n, a in named:
                if a.ndim == 0 or a.shape[0] != total:
                    raise ValueError(f"output {n!r} has shape {list(a.shape)}; a batch of {total} rows needs "
                                     f"its first dimension to be {total}")
        answers, start = [], 0
        for r in requests:
            stop = start + r.rows
            part = {n: (a[start:stop] if len(requests) > 1 else a) for n, a in named}
            start = stop
            if r.kind == "predict":
                lists = {n: np.asarray(a, dtype=np.float32 if a.dtype.name == "bfloat16" else None).tolist()
                         for n, a in part.items()}
                answers.append(next(iter(lists.values())) if len(lists) == 1 else lists)
            else:
                answers.append(part)
        return answers
