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

import asyncio
import logging
import time

import grpc
import numpy as np

from .. import __version__
from ..handlers import InvalidInput
from ..protos import inference_pb2 as pb
from ..protos import inference_pb2_grpc as pb_grpc
from .errors import BodyTooLarge, status_of
from .grpc_protocol import encode_model_infer_response, parameter_value, parse_model_infer_request
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
        """Triton's bidirectional stream: every request read is answered as soon as it finishes
        (requests run concurrently, so they batch with each other and with REST's); a failed
        request is a response with ``error_message`` and the stream goes on. The client ending
        the stream (or the call) cancels what is still running."""
        answers: asyncio.Queue = asyncio.Queue()
        inflight = 0
        reading = True

        async def answer(msg):
            nonlocal inflight
            try:
                async for item in self._stream_answers(msg):
                    answers.put_nowait(item)
            finally:
                inflight -= 1
                answers.put_nowait(None)  # wakes the consumer to look again

        async def read():
            nonlocal inflight, reading
            try:
                async for msg in request_iterator:
                    inflight += 1
                    task = asyncio.ensure_future(answer(msg))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            finally:
                reading = False
                answers.put_nowait(None)  # wakes the consumer to look again

        tasks: set = set()
        reader = asyncio.ensure_future(read())
        try:
            while reading or inflight or not answers.empty():
                item = await answers.get()
                if item is not None:
                    yield item
            if reader.done() and not reader.cancelled() and reader.exception() is not None:
                raise reader.exception()
        finally:
            reader.cancel()
            for task in list(tasks):
                task.cancel()

    async def _stream_answers(self, msg):
        """The ModelStreamInferResponses of one streamed request: its response or its error; for a
        ``text_generation`` model asked with the parameter ``stream`` true, one response per piece
        of text (Triton's decoupled responses, see ``_pieces``)."""
        m = None
        try:
            m = self._model(msg.model_name, msg.model_version)
        except ModelNotFound:
            pass  # _infer answers it
        if m is not None and m.engine is not None and _flag(msg.parameters, "stream"):
            async for item in self._pieces(m, msg):
                yield item
            return
        resp, status, message = await self._infer(msg, "ModelStreamInfer")
        yield (pb.ModelStreamInferResponse(infer_response=resp) if resp is not None
               else _stream_error(msg, message))

    async def _pieces(self, m, msg):
        """A streamed generation: each piece of text as it is made, a response with ``text_output``
        BYTES [1] and the parameter ``triton_final_response`` false; the last piece carries it true
        and ``finish_reason`` ("stop" or "length"), or, when the request sets
        ``triton_enable_empty_final_response`` (tritonclient's ``enable_empty_final_response``), an
        empty response after the pieces does, as Triton's decoupled models answer. One text per
        request; ``response_timeout_s`` bounds the whole generation."""
        start = time.perf_counter()
        rid = msg.id or new_request_id()
        events = None
        try:
            size = msg.ByteSize()
            if size > m.config.max_request_bytes:
                raise BodyTooLarge(f"the request is {size} bytes; the limit is {m.config.max_request_bytes} "
                                   "(max_request_bytes)")
            req, options = parse_model_infer_request(msg, m)
            req.id = rid
            specs = m.handler.jobs(req)
            if len(specs) != 1:
                raise InvalidInput(f"a streamed generation takes one text, the request holds {len(specs)}")
            empty_final = _flag(msg.parameters, "triton_enable_empty_final_response")
            deadline = time.monotonic() + m.config.response_timeout_s
            events = m.generate(specs)
            held = None  # the latest piece, sent once the next event says whether it was the last
            while True:
                try:
                    _, kind, value = await asyncio.wait_for(events.__anext__(), max(0.0, deadline - time.monotonic()))
                except asyncio.TimeoutError:
                    raise TimeoutError(f"model {m.name} version {m.version} gave no answer within "
                                       f"{m.config.response_timeout_s:g} s (response_timeout_s)") from None
                if kind == "error":
                    raise value
                if kind == "text":
                    if held is not None:
                        yield _piece(held, final=False)
                    held = encode_model_infer_response(
                        m, {"text_output": np.array([value.encode()], dtype=object)}, options)
                    continue
                reason = value[0]  # "done"
                if held is None and not empty_final:  # nothing was generated: the final response is empty text
                    held = encode_model_infer_response(m, {"text_output": np.array([b""], dtype=object)}, options)
                if held is not None:
                    yield _piece(held, final=not empty_final, reason=None if empty_final else reason)
                if empty_final:
                    yield _piece(pb.ModelInferResponse(model_name=m.name, model_version=m.version,
                                                       id=options["id"] or ""), final=True, reason=reason)
                break
        except Exception as e:
            status, message, _ = status_of(e)
            self._log("ModelStreamInfer", rid, msg.model_name, status, start, m)
            yield _stream_error(msg, message)
            return
        finally:
            if events is not None:
                await events.aclose()  # a stream closed early cancels the generation
        self._log("ModelStreamInfer", rid, msg.model_name, 200, start, m)

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


def _flag(parameters, key: str) -> bool:
    """Whether the request parameter ``key`` is set true (bool, or a non-zero int)."""
    return key in parameters and bool(parameter_value(parameters[key]))


def _stream_error(msg, message: str) -> pb.ModelStreamInferResponse:
    # the request's names and id tell the client which request failed
    return pb.ModelStreamInferResponse(error_message=message, infer_response=pb.ModelInferResponse(
        model_name=msg.model_name, model_version=msg.model_version, id=msg.id))


def _piece(resp: pb.ModelInferResponse, final: bool, reason: str | None = None) -> pb.ModelStreamInferResponse:
    resp.parameters["triton_final_response"].bool_param = final
    if reason is not None:
        resp.parameters["finish_reason"].string_param = reason
    return pb.ModelStreamInferResponse(infer_response=resp)


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
