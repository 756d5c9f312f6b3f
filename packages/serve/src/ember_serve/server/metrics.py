"""Prometheus metrics: Triton's names where Triton has the metric, ember's own beside them.

Triton's families (counters labelled ``model`` and ``version``, durations cumulative in
microseconds, as Triton reports them) are written in Triton's exact form:
``nv_inference_request_success``, ``nv_inference_request_failure``, ``nv_inference_count``
(rows inferred), ``nv_inference_exec_count`` (batches executed),
``nv_inference_request_duration_us``, ``nv_inference_queue_duration_us``,
``nv_inference_compute_input_duration_us``, ``nv_inference_compute_infer_duration_us``,
``nv_inference_compute_output_duration_us``. prometheus-client would append ``_total`` to a
counter's name, which existing Triton dashboards do not query, so these lines are rendered
here; ember's own metrics go through prometheus-client's registry (``ember_batch_size``
histogram, ``ember_queue_depth`` and ``ember_workers`` gauges, ``ember_requests_total`` by
protocol and status code). Handlers may register their own in ``registry``.

Source: Triton's metrics, https://github.com/triton-inference-server/server/blob/main/docs/user_guide/metrics.md
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["Metrics", "TRITON_FAMILIES"]

# (metric name, ModelStats field, help text as Triton words it)
TRITON_FAMILIES = [
    ("nv_inference_request_success", "request_success", "Number of successful inference requests, all batch sizes"),
    ("nv_inference_request_failure", "request_failure", "Number of failed inference requests, all batch sizes"),
    ("nv_inference_count", "inference_count", "Number of inferences performed (does not include cached requests)"),
    ("nv_inference_exec_count", "exec_count", "Number of model executions performed (does not include cached "
                                              "requests)"),
    ("nv_inference_request_duration_us", "request_duration_us", "Cumulative inference request duration in "
                                                                "microseconds (includes cached requests)"),
    ("nv_inference_queue_duration_us", "queue_duration_us", "Cumulative inference queuing duration in microseconds "
                                                            "(includes cached requests)"),
    ("nv_inference_compute_input_duration_us", "compute_input_duration_us", "Cumulative compute input duration in "
                                                                            "microseconds (does not include cached "
                                                                            "requests)"),
    ("nv_inference_compute_infer_duration_us", "compute_infer_duration_us", "Cumulative compute inference duration "
                                                                            "in microseconds (does not include cached "
                                                                            "requests)"),
    ("nv_inference_compute_output_duration_us", "compute_output_duration_us", "Cumulative inference compute output "
                                                                              "duration in microseconds (does not "
                                                                              "include cached requests)"),
]


def _label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class _ModelGauges(Collector):
    def __init__(self, models):
        self._models = models

    def collect(self):
        depth = GaugeMetricFamily("ember_queue_depth", "Requests waiting in the model's queue",
                                  labels=["model", "version"])
        workers = GaugeMetricFamily("ember_workers", "Worker threads of the model", labels=["model", "version"])
        for m in self._models():
            depth.add_metric([m.name, m.version], m.queue_length)
            workers.add_metric([m.name, m.version], m.batcher.workers)
        yield depth
        yield workers


class Metrics:
    """The server's metrics. ``models`` is a callable returning the ServedModels to report."""

    def __init__(self, models=lambda: []):
        self._models = models
        self.registry = CollectorRegistry()
        self.batch_size = Histogram("ember_batch_size", "Rows per executed batch", ["model", "version"],
                                    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256), registry=self.registry)
        self.requests = Counter("ember_requests", "Requests answered, by protocol and HTTP status",
                                ["model", "protocol", "code"], registry=self.registry)
        self.registry.register(_ModelGauges(models))

    def observe_batch(self, model: str, version: str, rows: int) -> None:
        self.batch_size.labels(model, version).observe(rows)

    def count_request(self, model: str, protocol: str, code: int) -> None:
        self.requests.labels(model or "", protocol, str(code)).inc()

    def render(self) -> bytes:
        """The text exposition format (version 0.0.4): Triton's families, then the registry's."""
        models = self._models()
        lines = []
        for metric, field, help_text in TRITON_FAMILIES:
            lines.append(f"# HELP {metric} {help_text}")
            lines.append(f"# TYPE {metric} counter")
            for m in models:
                with m.lock:
                    value = getattr(m.stats, field)
                shown = value if isinstance(value, int) else round(value)
                lines.append(f'{metric}{{model="{_label(m.name)}",version="{_label(m.version)}"}} {shown}')
        return ("\n".join(lines) + "\n").encode() + generate_latest(self.registry)
