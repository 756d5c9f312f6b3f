"""Triton's model repository extension, on the inference port, only with ``--model-control explicit``.

``POST /v2/repository/index`` lists the model store (``[{"name", "version", "state", "reason"}]``,
state ``READY`` when loaded; with ``{"ready": true}`` only those; over gRPC, RepositoryIndex),
``POST /v2/repository/models/{m}/load`` loads ``{m}.emar`` (or the unpacked folder ``{m}``) from
the store under the name ``m`` (a loaded model is reloaded), and ``.../unload`` unloads every
version of ``m``. These change what the server runs, so they follow
the management API's access rule: a Bearer token when one is set, and the server refuses to
enable them on a non-loopback inference address without one.

Source: https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_model_repository.md
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..archive import ArchiveError, manifest_of
from ..archive._members import MANIFEST_NAME, read_manifest
from .registry import ModelConflict, ModelNotFound, check_store_name

__all__ = ["repository_routes", "repository_index", "token_matches"]


def _entries(store: str) -> list[tuple[str, str, str | None]]:
    """``(model name, store entry, version or None when unreadable)`` for each archive in the store."""
    out = []
    for entry in sorted(os.listdir(store)):
        full = os.path.join(store, entry)
        if entry.startswith("."):
            continue
        try:
            if entry.endswith(".emar") and os.path.isfile(full):
                out.append((entry[:-5], entry, manifest_of(full)["version"]))
            elif os.path.isfile(os.path.join(full, MANIFEST_NAME)):
                with open(os.path.join(full, MANIFEST_NAME), "rb") as f:
                    out.append((entry, entry, read_manifest(f.read())["version"]))
        except (ArchiveError, OSError, KeyError, ValueError):
            out.append((entry[:-5] if entry.endswith(".emar") else entry, entry, None))
    return out


def token_matches(token: str | None, authorization: str) -> bool:
    """Whether an ``Authorization`` value grants access (anything does when no token is set)."""
    if not token:
        return True
    return authorization.startswith("Bearer ") and hmac.compare_digest(authorization[7:].encode(), token.encode())


def repository_index(state, ready_only: bool = False) -> list[dict]:
    """The store's models, ``[{"name", "version", "state", "reason"}]`` (state READY when loaded;
    only those with ``ready_only``), for REST's index and gRPC's RepositoryIndex."""
    loaded = {(m.name, m.version) for m in state.registry.all()}
    out = []
    for name, _, version in _entries(state.model_store):
        item = {"name": name, "version": version or "", "state": "UNAVAILABLE", "reason": ""}
        if version is None:
            item["reason"] = "unreadable archive"
        elif (name, version) in loaded:
            item.update(state="READY")
        if item["state"] == "READY" or not ready_only:
            out.append(item)
    return out


def repository_routes(state) -> list[Route]:
    registry, token = state.registry, state.management_token

    def guard(fn):
        async def wrapped(request):
            if token:
                if not token_matches(token, request.headers.get("authorization", "")):
                    return JSONResponse({"error": "the model repository extension needs 'Authorization: Bearer "
                                                  "<token>'"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            if not state.model_store:
                return JSONResponse({"error": "the server was started without --model-store"}, status_code=400)
            return await fn(request)
        return wrapped

    async def index(request):
        body = await request.body()
        ready_only = False
        if body:  # Triton's {"ready": true}: only the models ready for inference
            try:
                options = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                return JSONResponse({"error": f"malformed JSON in the index request: {e}"}, status_code=400)
            if not isinstance(options, dict) or not isinstance(options.get("ready", False), bool):
                return JSONResponse({"error": "the index request is an object whose 'ready' is true or false"},
                                    status_code=400)
            ready_only = options.get("ready", False)
        return JSONResponse(repository_index(state, ready_only))

    def _store_entry(name: str) -> str:
        for candidate in (f"{name}.emar", name):
            try:
                return check_store_name(candidate, state.model_store)
            except FileNotFoundError:
                continue
        raise FileNotFoundError(f"the model store holds no {name}.emar and no folder {name!r}")

    async def load(request):
        name = request.path_params["model"]
        try:
            path = _store_entry(name)
        except PermissionError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        except FileNotFoundError as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        loop = asyncio.get_running_loop()
        for version in (registry.versions(name) if name in registry.names() else []):
            old = registry.unregister(name, version)
            await loop.run_in_executor(None, old.close)
        try:
            await loop.run_in_executor(None, lambda: registry.load(path, name=name, source=os.path.basename(path)))
        except (ArchiveError, ModelConflict, ValueError, ImportError) as e:
            return JSONResponse({"error": f"failed to load {name!r}: {e}"}, status_code=400)
        return Response(status_code=200)

    async def unload(request):
        name = request.path_params["model"]
        body = await request.body()
        if body:
            try:
                json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                return JSONResponse({"error": f"malformed JSON in the unload request: {e}"}, status_code=400)
        try:
            versions = registry.versions(name)
        except ModelNotFound as e:
            return JSONResponse({"error": e.args[0]}, status_code=404)
        loop = asyncio.get_running_loop()
        for version in versions:
            old = registry.unregister(name, version)
            await loop.run_in_executor(None, old.close)
        return Response(status_code=200)

    return [Route("/v2/repository/index", guard(index), methods=["POST"]),
            Route("/v2/repository/models/{model}/load", guard(load), methods=["POST"]),
            Route("/v2/repository/models/{model}/unload", guard(unload), methods=["POST"])]
