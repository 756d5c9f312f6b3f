"""The inference API over gRPC: the Open Inference Protocol's GRPCInferenceService on grpc.aio.

It runs on the server's one event loop beside the REST applications and answers from the
same registry: a ModelInfer request goes to the same ServedModel queue as a REST infer request
(and is batched with it), under the same limits (the model's ``max_request_bytes``, queue size,
response timeout), and is counted in the same metrics (protocol ``grpc``). Failures are the
call's status (on ModelStreamInfer, a response's ``error_message``, the stream going on, as
Triton answers), mapped from the HTTP status the REST route gives the same failure, as Triton
maps its errors: 400 INVALID_ARGUMENT, 404 NOT_FOUND, 409 ALREADY_EXISTS, 413
RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED, anything else INTERNAL. A failed
call changes nothing else: the server and the model's batch go on.

Source: the Open Inference Protocol's gRPC specification and Triton's gRPC status codes
(https://github.com/triton-inference-server/server/blob/main/docs/protocol/README.md).
"""

from __future__ import annotations

import logging
import time

import grpc

from .. import __version__
from ..protos import inference_pb2 as pb
from ..protos import inference_pb2_grpc as pb_grpc
from .errors import BodyTooLarge, status_of
from .grpc_protocol import encode_model_infer_response, parse_model_infer_request
from .grpc_stream import stream_infer
from .ids import new_request_id
from .registry import ModelNotFound
from .repository import repository_index, token_matches
from .statistics import model_statistics

__all__ = ["GRPCInferenceServicer", "build_grpc_server", "grpc_code"]

access = logging.getLogger("ember_serve.access")

_CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 404: grpc.StatusCode.NOT_FOUND, 409: grpc.StatusCode.ALREADY_EXISTS,
          413: grpc.StatusCode.RESOURCE_EXHAUSTED, 503: grpc.StatusCode.UNAVAILABLE,
          504: grpc.StatusCode.DEADLINE_EXCEEDED}


def grpc_code(http_status: int) -> grpc.StatusCode:
    """The gRPC status of a failure the REST API answers with ``http_status``."""
    return _CODES.get(http_status, grpc.StatusCode.INTERNAL)


class GRPCInferenceServicer(pb_grpc.GRPCInferenceServiceServicer):
    """Health, metadata, ModelInfer, ModelStreamInfer, ModelStatistics and RepositoryIndex over
    ``state`` (``registry``, ``metrics``, ``ready``, ``model_control``, ``model_store``, ``management_token``)."""

    def __init__(self, state):
        self.state = state

    def _model(self, name: str, version: str):
        return self.state.registry.get(name, version or None)

    async def ServerLive(self, request, context):
        return pb.ServerLiveResponse(live=True)

    async def ServerReady(self, request, context):
        ready = self.state.ready and all(m.ready for m in self.state.registry.all())
        return pb.ServerReadyResponse(ready=ready)

    async def ModelReady(self, request, context):
        # as Triton does: an unknown model is not ready, and that is not an error
        try:
            return pb.ModelReadyResponse(ready=self._model(request.name, request.version).ready)
        except ModelNotFound:
            return pb.ModelReadyResponse(ready=False)

    async def ServerMetadata(self, request, context):
        # binary tensor data is REST's alone; the repository calls are there only in explicit mode
        extensions = ["statistics"] + (["model_repository"] if self._explicit else [])
        return pb.ServerMetadataResponse(name="ember-serve", version=__version__, extensions=extensions)

    @property
    def _explicit(self) -> bool:
        return getattr(self.state, "model_control", "none") == "explicit"

    async def ModelStatistics(self, request, context):
        try:
            stats = model_statistics(self.state.registry, request.name, request.version)
        except ModelNotFound as e:
            await context.abort(grpc.StatusCode.NOT_FOUND, e.args[0])
        except ValueError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        resp = pb.ModelStatisticsResponse()
        for entry in stats["model_stats"]:
            m = resp.model_stats.add(name=entry["name"], version=entry["version"],
                                     last_inference=entry["last_inference"], inference_count=entry["inference_count"],
                                     execution_count=entry["execution_count"])
            for field, d in entry["inference_stats"].items():
                getattr(m.inference_stats, field).CopyFrom(pb.StatisticDuration(**d))
            for b in entry["batch_stats"]:
                m.batch_stats.add(batch_size=b["batch_size"], **{k: pb.StatisticDuration(**b[k]) for k in
                                                                  ("compute_input", "compute_infer", "compute_output")})
        return resp

    async def RepositoryIndex(self, request, context):
        # REST's index under REST's rules: explicit model control, the management token when set
        if not self._explicit:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "the model repository extension needs the server "
                                "started with --model-control explicit")
        given = dict(context.invocation_metadata()).get("authorization", "")
        if not token_matches(self.state.management_token, given):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "the model repository extension needs "
                                "'authorization: Bearer <token>' metadata")
        if not self.state.model_store:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "the server was started without --model-store")
        if request.repository_name:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown repository {request.repository_name!r}: "
                                "ember serves one, the model store (leave repository_name empty)")
        resp = pb.RepositoryIndexResponse()
        for item in repository_index(self.state, request.ready):
            resp.models.add(**item)
        return resp

    async def ModelMetadata(self, request, context):
        try:
            m = self._model(request.name, request.version)
            versions = [m.version] if request.version else self.state.registry.versions(m.name)
        except ModelNotFound as e:
            await context.abort(grpc.StatusCode.NOT_FOUND, e.args[0])
        resp = pb.ModelMetadataResponse(name=m.name, versions=versions, platform="ember")
        for specs, target in ((m.inputs, resp.inputs), (m.outputs, resp.outputs)):
            for s in specs:
                target.add(name=s.name, datatype=s.datatype, shape=list(s.shape))
        return resp

    async def ModelInfer(self, request, context):
        resp, status, message = await self._infer(request, "ModelInfer")
        if resp is None:
            await context.abort(grpc_code(status), message)
        return resp

    async def ModelStreamInfer(self, request_iterator, context):
        """Triton's bidirectional stream (``grpc_stream``)."""
        async for item in stream_infer(self, request_iterator):
            yield item

    async def _infer(self, request, call: str):
        """``(response, 200, "")``, or ``(None, HTTP status, message)`` for a failed request."""
        start = time.perf_counter()
        rid = request.id or new_request_id()
        m = None
        try:
            m = self._model(request.model_name, request.model_version)
            size = request.ByteSize()
            if size > m.config.max_request_bytes:
                raise BodyTooLarge(f"the request is {size} bytes; the limit is {m.config.max_request_bytes} "
                                   "(max_request_bytes)")
            req, options = parse_model_infer_request(request, m)
            req.id = rid
            answer = await m.submit(req)
            resp = encode_model_infer_response(m, answer, options)
        except Exception as e:
            status, message, _ = status_of(e)
            self._log(call, rid, request.model_name, status, start, m)
            return None, status, message
        self._log(call, rid, request.model_name, 200, start, m)
        return resp, 200, ""

    def _log(self, call: str, rid: str, name: str, status: int, start: float, served) -> None:
        elapsed = time.perf_counter() - start
        if served is not None:
            served.record(status == 200, elapsed)
            # the code label keeps its REST meaning: the HTTP status the same outcome gets there
            self.state.metrics.count_request(served.name, "grpc", status)
        access.info("%s grpc %s %d %.1fms model=%s", rid, call, status, elapsed * 1e3, name)


def build_grpc_server(state, host: str, port: int, max_receive_bytes: int):
    """A grpc.aio server bound to ``host:port`` (0: a free port), not yet started: ``(server, port)``.

    Messages above ``max_receive_bytes`` are refused by gRPC itself (RESOURCE_EXHAUSTED) before
    they are read whole; answers have no size limit. Raises OSError when the address is taken."""
    server = grpc.aio.server(options=[
        ("grpc.max_receive_message_length", max_receive_bytes),
        ("grpc.max_send_message_length", -1),
        # gRPC shares a port with another listener by default (SO_REUSEPORT); a taken port must fail
        ("grpc.so_reuseport", 0),
    ])
    pb_grpc.add_GRPCInferenceServiceServicer_to_server(GRPCInferenceServicer(state), server)
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError as e:
        raise OSError(f"cannot listen on {address} (gRPC): {e}") from None
    if not bound:
        raise OSError(f"cannot listen on {address} (gRPC)")
    return server, bound
