"""Exceptions -> HTTP answers, in one place.

Open Inference Protocol routes answer ``{"error": message}``; TorchServe's management routes
answer ``{"code", "type", "message"}`` as TorchServe does. A handler's own exception is a 500
carrying its type and message; nothing a request does stops a worker or the server.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib

from starlette.requests import Request as HTTPRequest

from ..archive import ArchiveError
from ..datatypes import ProtocolError
from ..handlers import InvalidInput
from .batcher import QueueFull
from .registry import ModelConflict, ModelNotFound

__all__ = ["BodyTooLarge", "status_of", "read_body"]


class BodyTooLarge(ValueError):
    """A request body above the limit (413)."""


def status_of(exc: BaseException) -> tuple[int, str, dict]:
    """``(status, message, extra headers)`` for an exception raised while answering."""
    if isinstance(exc, BodyTooLarge):
        return 413, str(exc), {}
    if isinstance(exc, (ProtocolError, InvalidInput, ArchiveError)):
        return 400, str(exc), {}
    if isinstance(exc, ModelNotFound):
        return 404, exc.args[0] if exc.args else str(exc), {}
    if isinstance(exc, ModelConflict):
        return 409, str(exc), {}
    if isinstance(exc, QueueFull):
        return 503, str(exc), {"Retry-After": "1"}
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return 504, str(exc), {}
    if isinstance(exc, RuntimeError) and "shutting down" in str(exc):
        return 503, str(exc), {"Retry-After": "1"}
    return 500, f"{type(exc).__name__}: {exc}", {}


async def read_body(request: HTTPRequest, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (after gzip/deflate Content-Encoding is undone).

    Raises BodyTooLarge before reading on a large Content-Length, or as soon as the bytes
    read pass the limit; ProtocolError for a body that does not decompress."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise BodyTooLarge(f"the request body is {int(length)} bytes; the limit is {limit} (max_request_bytes)")
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise BodyTooLarge(f"the request body is over the limit of {limit} bytes (max_request_bytes)")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise ProtocolError(f"Content-Encoding {encoding!r} is not supported (gzip, deflate)")
    try:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
        out = d.decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile) as e:
        raise ProtocolError(f"the {encoding} body does not decompress: {e}") from None
    if len(out) > limit:
        raise BodyTooLarge(f"the decompressed request body is over the limit of {limit} bytes")
    return out
