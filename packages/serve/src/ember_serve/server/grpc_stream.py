"""Triton's ModelStreamInfer: a bidirectional stream of inference requests on grpc.aio.

Every request read from the stream runs at once, beside the others (so they batch with each
other and with REST's), and is answered on the stream as soon as it finishes: its
ModelInferResponse, or its error as ``error_message`` (with the request's model, version and id
in ``infer_response``), the stream going on, as Triton answers. A ``text_generation`` request
with the parameter ``stream`` true is answered piece by piece (Triton's decoupled responses,
``_pieces``). The client ending the stream, or the call, cancels what is still running.

Source: Triton's gRPC protocol and decoupled models
(https://github.com/triton-inference-server/server/blob/main/docs/user_guide/decoupled_models.md).
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from ..handlers import InvalidInput
from ..protos import inference_pb2 as pb
from .errors import BodyTooLarge, status_of
from .grpc_protocol import encode_model_infer_response, parameter_value, parse_model_infer_request
from .ids import new_request_id
from .registry import ModelNotFound

__all__ = ["stream_infer"]


async def stream_infer(servicer, request_iterator):
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
            async for item in _stream_answers(servicer, msg):
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

async def _stream_answers(servicer, msg):
    """The ModelStreamInferResponses of one streamed request: its response or its error; for a
    ``text_generation`` model asked with the parameter ``stream`` true, one response per piece
    of text (Triton's decoupled responses, see ``_pieces``)."""
    m = None
    try:
        m = servicer._model(msg.model_name, msg.model_version)
    except ModelNotFound:
        pass  # _infer answers it
    if m is not None and m.engine is not None and _flag(msg.parameters, "stream"):
        async for item in _pieces(servicer, m, msg):
            yield item
        return
    resp, status, message = await servicer._infer(msg, "ModelStreamInfer")
    yield (pb.ModelStreamInferResponse(infer_response=resp) if resp is not None
           else _stream_error(msg, message))

async def _pieces(servicer, m, msg):
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
        servicer._log("ModelStreamInfer", rid, msg.model_name, status, start, m)
        yield _stream_error(msg, message)
        return
    finally:
        if events is not None:
            await events.aclose()  # a stream closed early cancels the generation
    servicer._log("ModelStreamInfer", rid, msg.model_name, 200, start, m)


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
