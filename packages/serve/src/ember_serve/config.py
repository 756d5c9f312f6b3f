"""The serving configuration of one model (``config.json`` inside an archive).

Keys (all optional; defaults in brackets):

- ``max_batch_size`` [0]: most rows one execution takes; requests are concatenated along
  dimension 0 (the batch dimension) up to it. 0, the default as in Triton, turns batching
  off: each request runs alone, with whatever shapes it brings.
- ``max_batch_delay_ms`` [0]: how long the first request of a batch may wait for others, ms.
- ``workers`` [1]: worker threads, each running one batch at a time.
- ``device`` ["cpu"]: where the model runs (an ember device string).
- ``response_timeout_s`` [120]: a request not answered by then gets 504, seconds.
- ``max_request_bytes`` [64 MiB]: larger request bodies get 413.
- ``queue_size`` [1024]: requests waiting at most; beyond it the server answers 503 with Retry-After.
- ``inputs`` / ``outputs``: ``[{"name", "datatype", "shape"}]`` with -1 for variable dimensions
  (the batch dimension included, first); the datatypes are the Open Inference Protocol's.
- ``handler`` settings are free-form under ``"handler_config"`` (``topk``, ``preprocess``...).

Source: Triton's model configuration (max_batch_size, dynamic_batching.max_queue_delay_microseconds,
input/output dims) and TorchServe's model-config.yaml (batchSize, maxBatchDelay, minWorkers,
responseTimeout), https://github.com/triton-inference-server/server/blob/main/docs/user_guide/model_configuration.md
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .datatypes import DATATYPES

__all__ = ["ModelConfig", "TensorSpec", "DEFAULT_MAX_REQUEST_BYTES"]

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass
class TensorSpec:
    """One input or output of a model.

    Args:
        name: the tensor's name in requests and responses (non-empty).
        datatype: its Open Inference Protocol datatype (``"FP32"``, ``"INT64"``, ``"BYTES"``, ...).
        shape: its dimensions, -1 for any size (the batch dimension first when batching).

    Raises ValueError for an empty name, an unknown datatype or a dimension below -1.
    """

    name: str
    datatype: str
    shape: list[int]

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a tensor spec needs a non-empty name, got {self.name!r}")
        if self.datatype not in DATATYPES:
            raise ValueError(f"tensor {self.name!r}: datatype must be one of {', '.join(DATATYPES)}, "
                             f"got {self.datatype!r}")
        if not isinstance(self.shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in self.shape):
            raise ValueError(f"tensor {self.name!r}: shape must be a list of integers >= -1, got {self.shape!r}")
        self.shape = list(self.shape)

    def to_dict(self) -> dict:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}

    def matches(self, shape) -> bool:
        return len(shape) == len(self.shape) and all(w == -1 or w == d for w, d in zip(self.shape, shape))


_INT_KEYS = {"max_batch_size": 0, "workers": 1, "max_request_bytes": 1, "queue_size": 1}
_FLOAT_KEYS = {"max_batch_delay_ms": 0.0, "response_timeout_s": 0.0}


@dataclasses.dataclass
class ModelConfig:
    """The serving configuration of one model (``config.json`` inside an archive).

    Args:
        max_batch_size: most rows one execution takes (0: no batching, each request alone).
        max_batch_delay_ms: how long the first request of a batch may wait for others, in ms.
        workers: worker threads, each running one batch at a time (>= 1).
        device: where the model runs (an ember device string).
        response_timeout_s: seconds before an unanswered request gets 504 (> 0).
        max_request_bytes: larger request bodies get 413 (>= 1).
        queue_size: most requests waiting; beyond it the server answers 503 (>= 1).
        inputs, outputs: :class:`TensorSpec` (or dicts of its fields) of the model's tensors.
        handler_config: free-form settings of the handler (a dict).

    Raises ValueError for a value of the wrong type or below its bound (see the module
    docstring for the semantics and sources).
    """

    max_batch_size: int = 0
    max_batch_delay_ms: float = 0.0
    workers: int = 1
    device: str = "cpu"
    response_timeout_s: float = 120.0
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    queue_size: int = 1024
    inputs: list[TensorSpec] = dataclasses.field(default_factory=list)
    outputs: list[TensorSpec] = dataclasses.field(default_factory=list)
    handler_config: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for key, low in _INT_KEYS.items():
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"config {key!r} must be an integer >= {low}, got {v!r}")
        for key, low in _FLOAT_KEYS.items():
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < low:
                raise ValueError(f"config {key!r} must be a number >= {low}, got {v!r}")
            setattr(self, key, float(v))
        if self.response_timeout_s <= 0:
            raise ValueError(f"config 'response_timeout_s' must be > 0, got {self.response_timeout_s}")
        if not isinstance(self.handler_config, dict):
            raise ValueError(f"config 'handler_config' must be an object, got {type(self.handler_config).__name__}")
        self.inputs = [s if isinstance(s, TensorSpec) else TensorSpec(**s) for s in self.inputs]
        self.outputs = [s if isinstance(s, TensorSpec) else TensorSpec(**s) for s in self.outputs]

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        """Raises ValueError naming an unknown key or a bad value."""
        if not isinstance(d, dict):
            raise ValueError(f"a model config must be a JSON object, got {type(d).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config key(s) {unknown}: expected some of {sorted(known)}")
        return cls(**d)

    @classmethod
    def from_json(cls, text: str | bytes) -> ModelConfig:
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"the model config is not valid JSON: {e}") from None
        return cls.from_dict(d)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["inputs"] = [s.to_dict() for s in self.inputs]
        d["outputs"] = [s.to_dict() for s in self.outputs]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)
