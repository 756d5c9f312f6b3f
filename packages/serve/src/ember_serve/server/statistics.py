"""Triton's statistics extension: a model's cumulative request, queue and compute statistics.

``GET /v2/models/stats``, ``/v2/models/{m}/stats`` and ``/v2/models/{m}/versions/{v}/stats``
over REST, ``ModelStatistics`` over gRPC: ``{"model_stats": [...]}``, one entry per model
version, in Triton's fields. Durations are nanoseconds; ``success``/``fail`` count requests
and their end-to-end time; ``queue`` and ``compute_*`` count the requests that successful
batches ran, each credited with its batch's whole compute time (as the metrics do);
``batch_stats`` has one entry per executed batch size (for a ``text_generation`` model, a
decoding step of that many sequences), counting batches. ``last_inference`` is when the last
request was answered, in milliseconds since the epoch (0: never). ember keeps no response
cache and no per-response statistics: ``cache_hit``/``cache_miss`` stay zero,
``response_stats`` and ``memory_usage`` empty.

Source: https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_statistics.md
"""

from __future__ import annotations

__all__ = ["model_statistics"]


def _duration(count: int, us: float) -> dict:
    return {"count": int(count), "ns": int(round(us * 1000))}


def _entry(m) -> dict:
    with m.lock:
        s = m.stats
        ran = s.executed_requests
        batches = sorted((rows, list(v)) for rows, v in s.batches.items())
        return {
            "name": m.name, "version": m.version, "last_inference": s.last_inference_ms,
            "inference_count": s.inference_count, "execution_count": s.exec_count,
            "inference_stats": {
                "success": _duration(s.request_success, s.success_duration_us),
                "fail": _duration(s.request_failure, s.failure_duration_us),
                "queue": _duration(ran, s.queue_duration_us),
                "compute_input": _duration(ran, s.compute_input_duration_us),
                "compute_infer": _duration(ran, s.compute_infer_duration_us),
                "compute_output": _duration(ran, s.compute_output_duration_us),
                "cache_hit": _duration(0, 0.0), "cache_miss": _duration(0, 0.0),
            },
            "batch_stats": [{"batch_size": rows, "compute_input": _duration(n, i), "compute_infer": _duration(n, f),
                             "compute_output": _duration(n, o)} for rows, (n, i, f, o) in batches],
            "memory_usage": [], "response_stats": {},
        }


def model_statistics(registry, name: str = "", version: str = "") -> dict:
    """``{"model_stats": [...]}`` for every served model version (``name`` empty), every version of
    ``name`` (``version`` empty), or that one version. Raises ModelNotFound for an unknown one."""
    if not name:
        if version:
            raise ValueError("a version needs a model name")
        models = sorted(registry.all(), key=lambda m: (m.name, m.version))
    elif version:
        models = [registry.get(name, version)]
    else:
        models = [registry.get(name, v) for v in registry.versions(name)]
    return {"model_stats": [_entry(m) for m in models]}
