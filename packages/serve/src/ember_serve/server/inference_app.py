"""The inference API: Open Inference Protocol v2 REST (with Triton's statistics extension),
TorchServe's ``/predictions`` and ``/ping``."""

from __future__ import annotations

import json
import logging
import time

from starlette.applications import Starlette
from starlette.requests import Request as HTTPRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import __version__
from ..handlers import Request
from .errors import read_body, status_of
from .ids import new_request_id
from .protocol import HEADER_LENGTH, encode_infer_response, parse_infer_request
from .statistics import model_statistics

__all__ = ["build_inference_app"]

access = logging.getLogger("ember_serve.access")
EXTENSIONS = ["binary_tensor_data", "statistics"]


def build_inference_app(state) -> Starlette:
    """``state`` carries ``registry``, ``metrics``, ``ready`` (bool) and ``max_request_bytes``."""
    registry, metrics = state.registry, state.metrics

    def log(request: HTTPRequest, rid: str, status: int, start: float, model: str = "", protocol: str = "v2",
            served=None):
        if served is not None:
            served.record(status == 200, time.perf_counter() - start)
        if access.isEnabledFor(logging.INFO):  # request.url builds a URL object: only when logged
            access.info("%s %s %s %d %.1fms model=%s", rid, request.method, request.url.path, status,
                        (time.perf_counter() - start) * 1e3, model)
        if served is not None:  # only served names become labels: unknown ones must not grow the metrics
            metrics.count_request(served.name, protocol, status)

    def error(exc: BaseException, rid: str) -> JSONResponse:
        status, message, headers = status_of(exc)
        return JSONResponse({"error": message}, status_code=status, headers={**headers, "X-Request-ID": rid})

    async def server_metadata(request):
        extensions = EXTENSIONS + (["model_repository"] if getattr(state, "model_control", "none") == "explicit"
                                   else [])
        return JSONResponse({"name": "ember-serve", "version": __version__, "extensions": extensions})

    async def live(request):
        return Response(status_code=200)

    async def ready(request):
        ok = state.ready and all(m.ready for m in registry.all())
        return Response(status_code=200 if ok else 503)

    def _model(request):
        return registry.get(request.path_params["model"], request.path_params.get("version"))

    async def model_metadata(request):
        try:
            m = _model(request)
            versions = [m.version] if "version" in request.path_params else registry.versions(m.name)
        except LookupError as e:
            return JSONResponse({"error": e.args[0]}, status_code=404)
        return JSONResponse({"name": m.name, "versions": versions, "platform": "ember",
                             "inputs": [s.to_dict() for s in m.inputs], "outputs": [s.to_dict() for s in m.outputs]})

    async def model_ready(request):
        try:
            m = _model(request)
        except LookupError as e:
            return JSONResponse({"error": e.args[0]}, status_code=404)
        return Response(status_code=200 if m.ready else 503)

    async def statistics(request):
        try:
            stats = model_statistics(registry, request.path_params.get("model", ""),
                                     request.path_params.get("version", ""))
        except LookupError as e:
            return JSONResponse({"error": e.args[0]}, status_code=404)
        return JSONResponse(stats)

    async def infer(request):
        start = time.perf_counter()
        rid = request.headers.get("x-request-id") or new_request_id()
        name, m = request.path_params["model"], None
        try:
            m = _model(request)
            body = await read_body(request, m.config.max_request_bytes)
            req, options = parse_infer_request(body, request.headers.get(HEADER_LENGTH), m)
            if options["id"] is None:
                req.id = rid
            answer = await m.submit(req)
            content, headers = encode_infer_response(m, answer, options, options["id"])
        except Exception as e:
            resp = error(e, rid)
            log(request, rid, resp.status_code, start, name, served=m)
            return resp
        log(request, rid, 200, start, name, served=m)
        headers["X-Request-ID"] = rid
        return Response(content, status_code=200, headers=headers)

    async def predictions(request):
        start = time.perf_counter()
        rid = request.headers.get("x-request-id") or new_request_id()
        name, m = request.path_params["model"], None
        try:
            m = _model(request)
            body = await read_body(request, m.config.max_request_bytes)
            req = Request(id=rid, kind="predict", body=body, content_type=request.headers.get("content-type", ""),
                          parameters=dict(request.query_params))
            answer = await m.submit(req)
        except Exception as e:
            resp = error(e, rid)
            log(request, rid, resp.status_code, start, name, "predictions", served=m)
            return resp
        if isinstance(answer, (bytes, bytearray)):
            log(request, rid, 200, start, name, "predictions", served=m)
            return Response(bytes(answer), headers={"X-Request-ID": rid}, media_type="application/octet-stream")
        try:
            content = json.dumps(answer).encode()
        except (TypeError, ValueError) as e:
            resp = error(TypeError(f"the handler's answer cannot be written as JSON: {e}"), rid)
            log(request, rid, resp.status_code, start, name, "predictions", served=m)
            return resp
        log(request, rid, 200, start, name, "predictions", served=m)
        return Response(content, media_type="application/json", headers={"X-Request-ID": rid})

    async def ping(request):
        ok = state.ready and all(m.ready for m in registry.all())
        return JSONResponse({"status": "Healthy" if ok else "Unhealthy"}, status_code=200 if ok else 500)

    base = "/v2/models/{model}"
    routes = [
        Route("/v2", server_metadata), Route("/v2/health/live", live), Route("/v2/health/ready", ready),
        # before the model routes: "stats" is not a model name here, as in Triton
        Route("/v2/models/stats", statistics), Route(base + "/stats", statistics),
        Route(base + "/versions/{version}/stats", statistics),
        Route(base, model_metadata), Route(base + "/versions/{version}", model_metadata),
        Route(base + "/ready", model_ready), Route(base + "/versions/{version}/ready", model_ready),
        Route(base + "/infer", infer, methods=["POST"]),
        Route(base + "/versions/{version}/infer", infer, methods=["POST"]),
        Route("/predictions/{model}", predictions, methods=["POST", "PUT"]),
        Route("/predictions/{model}/{version}", predictions, methods=["POST", "PUT"]),
        Route("/ping", ping),
    ]
    from .openai_app import openai_routes
    routes += openai_routes(state)
    if getattr(state, "model_control", "none") == "explicit":
        from .repository import repository_routes
        routes += repository_routes(state)

    async def not_found(request, exc):
        return JSONResponse({"error": f"no route {request.method} {request.url.path}"},
                            status_code=getattr(exc, "status_code", 404))

    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
