"""The management API: TorchServe's model routes, on its own port.

Bound to loopback by default. When a token is set, every request must carry
``Authorization: Bearer <token>`` (401 otherwise); the server refuses to bind the management
API to a non-loopback address without one. Models are registered only from the model store,
by file or folder name (never a URL or a path: CVE-2023-43654).

Routes: ``GET /models``, ``POST /models?url=&model_name=&initial_workers=&batch_size=&max_batch_delay=
&response_timeout=``, ``GET /models/{m}[/{v}|/all]``, ``PUT /models/{m}[/{v}]?min_worker=N``,
``DELETE /models/{m}[/{v}]``, ``PUT /models/{m}/{v}/set-default``.

Source: https://pytorch.org/serve/management_api.html
"""

from __future__ import annotations

import asyncio
import hmac
import logging

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..archive import ArchiveError
from .registry import ModelConflict, ModelNotFound, check_store_name

__all__ = ["build_management_app"]

log = logging.getLogger("ember_serve.management")


def _err(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"code": status, "type": kind, "message": message}, status_code=status)


def _int_param(query, key: str, low: int = 0):
    v = query.get(key)
    if v is None or v == "":
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"query parameter {key!r} must be an integer, got {v!r}") from None
    if n < low:
        raise ValueError(f"query parameter {key!r} must be >= {low}, got {n}")
    return n


def build_management_app(state) -> Starlette:
    """``state`` carries ``registry``, ``model_store`` and ``management_token`` (or None)."""
    registry = state.registry
    token = state.management_token

    def authorized(request) -> bool:
        if not token:
            return True
        given = request.headers.get("authorization", "")
        return given.startswith("Bearer ") and hmac.compare_digest(given[7:].encode(), token.encode())

    def guard(fn):
        async def wrapped(request):
            if not authorized(request):
                return JSONResponse({"code": 401, "type": "Unauthorized",
                                     "message": "the management API needs 'Authorization: Bearer <token>'"},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
            try:
                return await fn(request)
            except ModelNotFound as e:
                return _err(404, "ModelNotFoundException", e.args[0])
            except ValueError as e:
                return _err(400, "BadRequestException", str(e))
        return wrapped

    async def list_models(request):
        return JSONResponse({"models": [{"modelName": n, "modelUrl": registry.get(n).source}
                                        for n in registry.names()]})

    async def register(request):
        q = request.query_params
        url = q.get("url")
        try:
            path = check_store_name(url, state.model_store)
        except PermissionError as e:
            return _err(400, "InvalidModelUrlException", str(e))
        except FileNotFoundError as e:
            return _err(404, "ModelNotFoundException", str(e))
        overrides = {"workers": _int_param(q, "initial_workers"), "max_batch_size": _int_param(q, "batch_size"),
                     "max_batch_delay_ms": _int_param(q, "max_batch_delay"),
                     "response_timeout_s": _int_param(q, "response_timeout", 1)}
        loop = asyncio.get_running_loop()
        try:
            model = await loop.run_in_executor(None, lambda: registry.load(path, name=q.get("model_name") or None,
                                                                           overrides=overrides, source=url))
        except ArchiveError as e:
            return _err(400, "InvalidModelException", f"archive {url!r} refused: {e}")
        except ModelConflict as e:
            return _err(409, "ConflictStatusException", str(e))
        except (ValueError, ImportError) as e:
            return _err(400, "InvalidModelException", f"archive {url!r} cannot be served: {e}")
        log.info("registered %s version %s from %s", model.name, model.version, url)
        return JSONResponse({"status": f'Model "{model.name}" Version: {model.version} registered with '
                                       f"{model.batcher.workers} initial workers"})

    async def describe(request):
        name, version = request.path_params["model"], request.path_params.get("version")
        if version == "all":
            return JSONResponse([registry.get(name, v).describe() for v in registry.versions(name)])
        return JSONResponse([registry.get(name, version).describe()])

    async def scale(request):
        name, version = request.path_params["model"], request.path_params.get("version")
        m = registry.get(name, version)
        n = _int_param(request.query_params, "min_worker")
        if n is None:
            raise ValueError("give the number of workers as min_worker=N")
        m.batcher.scale(n)
        return JSONResponse({"status": f"Workers scaled to {n} for model: {m.name}, version: {m.version}"})

    async def unregister(request):
        name, version = request.path_params["model"], request.path_params.get("version")
        m = registry.unregister(name, version)
        await asyncio.get_running_loop().run_in_executor(None, m.close)
        log.info("unregistered %s version %s", m.name, m.version)
        return JSONResponse({"status": f'Model "{m.name}" version "{m.version}" unregistered'})

    async def set_default(request):
        name, version = request.path_params["model"], request.path_params["version"]
        registry.set_default(name, version)
        return JSONResponse({"status": f'Default version successfully updated for model "{name}" to "{version}"'})

    routes = [
        Route("/models", guard(list_models), methods=["GET"]),
        Route("/models", guard(register), methods=["POST"]),
        Route("/models/{model}", guard(describe), methods=["GET"]),
        Route("/models/{model}", guard(scale), methods=["PUT"]),
        Route("/models/{model}", guard(unregister), methods=["DELETE"]),
        Route("/models/{model}/{version}/set-default", guard(set_default), methods=["PUT"]),
        Route("/models/{model}/{version}", guard(describe), methods=["GET"]),
        Route("/models/{model}/{version}", guard(scale), methods=["PUT"]),
        Route("/models/{model}/{version}", guard(unregister), methods=["DELETE"]),
    ]

    async def not_found(request, exc):
        status = getattr(exc, "status_code", 404)
        return _err(status, "NotFound" if status == 404 else "MethodNotAllowed",
                    f"no route {request.method} {request.url.path}")

    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
