"""The server process: three listening sockets, one uvicorn server, one event loop.

The inference API, the management API and ``/metrics`` listen on their own ports; one
uvicorn server serves all three sockets and an ASGI dispatcher picks the application by the
port a connection arrived on, so that one signal handler, one graceful shutdown and one
event loop cover everything. With ``grpc_port`` a grpc.aio server (``grpc_app``) runs on
the same loop, bound with the others and serving once the startup models are loaded. On
SIGTERM or SIGINT uvicorn stops accepting, finishes the requests in flight, then the gRPC
server stops (its calls in flight finish), the models' queues are drained and their workers
stopped.

Model workers are threads of this process (see ``batcher``): a Python exception in a
handler is answered 500 and the worker goes on; a crash in native code (a segfault in an
extension) takes the whole server down, as there is no worker process to lose instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import signal
import socket
import sys
import threading
import types

import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from ..archive import DEFAULT_MAX_ARCHIVE_BYTES
from ..config import DEFAULT_MAX_REQUEST_BYTES
from .inference_app import build_inference_app
from .management_app import build_management_app
from .metrics import Metrics
from .registry import ModelRegistry

__all__ = ["ServerOptions", "Server", "is_loopback"]

log = logging.getLogger("ember_serve")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclasses.dataclass
class ServerOptions:
    """How :class:`Server` listens and what it loads. Ports 0 pick free ones (printed once listening).

    Args:
        host, port: the inference API's address (Open Inference Protocol, TorchServe and OpenAI routes).
        management_host, management_port: the management API's address (register, scale, unregister).
        metrics_host, metrics_port: the Prometheus ``/metrics`` address (host None: ``host``).
        model_store: the folder of ``.emar`` archives that registration by name reads (None: none).
        models: ``[(name, path)]`` archives loaded at start.
        management_token: the bearer token the management API requires (needed beyond loopback).
        max_request_bytes: default largest request body, in bytes (a model's config may set its own).
        max_archive_bytes: largest archive accepted, in bytes.
        graceful_timeout_s: seconds in-flight requests get at shutdown (None: no limit).
        model_control: "none", or "explicit" for Triton's model repository extension on the
            inference port.
        log_level: uvicorn's and the server's log level ("debug", "info", "warning", ...).
        grpc_port: the gRPC endpoint's port (None: no gRPC endpoint).
        grpc_host: the gRPC endpoint's host (None: ``host``).
    """

    host: str = "127.0.0.1"
    port: int = 8080
    management_host: str = "127.0.0.1"
    management_port: int = 8081
    metrics_host: str | None = None  # None: the inference host
    metrics_port: int = 8082
    model_store: str | None = None
    models: list = dataclasses.field(default_factory=list)
    management_token: str | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES
    graceful_timeout_s: float | None = 30.0
    model_control: str = "none"  # "explicit": Triton's model repository extension on the inference port
    log_level: str = "info"
    grpc_port: int | None = None  # None: no gRPC endpoint
    grpc_host: str | None = None  # None: the inference host


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from None
    s.listen(2048)
    s.setblocking(False)
    return s


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):
        # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, so the process would end
        # "killed by signal"; a completed graceful stop exits with status 0 instead
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        originals = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, handler in originals.items():
                signal.signal(s, handler)


class Server:
    """``Server(options).run()`` serves until a signal; ``urls`` holds the bound addresses.

    ``options`` is a :class:`ServerOptions`. Raises ValueError for a management API (or
    ``model_control="explicit"``) beyond loopback without a token, an unknown ``model_control``,
    or a ``grpc_port`` without the gRPC modules.
    """

    def __init__(self, options: ServerOptions):
        if not is_loopback(options.management_host) and not options.management_token:
            raise ValueError(f"the management API would listen on {options.management_host}, beyond loopback, "
                             "without a token: set --management-token (or EMBER_SERVE_TOKEN) or bind it to 127.0.0.1")
        if options.model_control not in ("none", "explicit"):
            raise ValueError(f"model_control must be 'none' or 'explicit', got {options.model_control!r}")
        if options.model_control == "explicit" and not is_loopback(options.host) and not options.management_token:
            raise ValueError(f"--model-control explicit would let anyone reaching {options.host} load and unload "
                             "models: set --management-token (or EMBER_SERVE_TOKEN) or bind to 127.0.0.1")
        if options.grpc_port is not None:
            try:
                from . import grpc_app  # noqa: F401
            except ImportError as e:
                raise ValueError(f"--grpc-port needs grpcio and protobuf (pip install 'ember-serve[grpc]') and the "
                                 "gRPC modules generated when ember-serve is built (in a source checkout: python "
                                 f"packages/serve/setup.py build_proto): {e}") from None
        self.options = options
        self.metrics = Metrics(lambda: self.registry.all())
        self.registry = ModelRegistry(metrics=self.metrics, max_archive_bytes=options.max_archive_bytes,
                                      default_max_request_bytes=options.max_request_bytes)
        self.state = types.SimpleNamespace(registry=self.registry, metrics=self.metrics, ready=False,
                                           model_store=options.model_store,
                                           management_token=options.management_token,
                                           model_control=options.model_control)
        self.urls: dict[str, str] = {}
        self._uvicorn: uvicorn.Server | None = None
        self._grpc = None  # the grpc.aio server when --grpc-port is given

    def _apps(self):
        async def metrics(request):
            return Response(self.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")
        return (build_inference_app(self.state), build_management_app(self.state),
                Starlette(routes=[Route("/metrics", metrics)]))

    def _dispatcher(self, by_port: dict):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await self._lifespan(receive, send)
            port = (scope.get("server") or (None, None))[1]
            target = by_port.get(port)
            if target is None:
                return await Response(status_code=404)(scope, receive, send)
            return await target(scope, receive, send)
        return app

    async def _lifespan(self, receive, send):
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._load_startup_models()
                    if self._grpc is not None:
                        await self._grpc.start()
                except Exception as e:
                    await send({"type": "lifespan.startup.failed", "message": f"{type(e).__name__}: {e}"})
                    return
                self.state.ready = True
                await send({"type": "lifespan.startup.complete"})
                print("ember-serve listening: " + " ".join(f"{k}={v}" for k, v in self.urls.items()), flush=True)
            elif message["type"] == "lifespan.shutdown":
                self.state.ready = False
                if self._grpc is not None:
                    # no new calls; those in flight finish before the models close
                    await self._grpc.stop(self.options.graceful_timeout_s)
                loop = asyncio.get_running_loop()
                for m in self.registry.all():
                    await loop.run_in_executor(None, m.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _load_startup_models(self):
        loop = asyncio.get_running_loop()
        for name, path in self.options.models:
            model = await loop.run_in_executor(None, lambda n=name, p=path: self.registry.load(p, name=n))
            model.loaded_at_startup = True
            log.info("loaded %s version %s from %s (%d workers)", model.name, model.version, path,
                     model.batcher.workers)

    def bind(self) -> list[socket.socket]:
        o = self.options
        plan = [("inference", o.host, o.port), ("management", o.management_host, o.management_port),
                ("metrics", o.metrics_host or o.host, o.metrics_port)]
        sockets = []
        try:
            for _, host, port in plan:
                sockets.append(_bind(host, port))
        except OSError:
            for s in sockets:
                s.close()
            raise
        for (kind, host, _), s in zip(plan, sockets):
            shown = f"[{host}]" if ":" in host else host
            self.urls[kind] = f"http://{shown}:{s.getsockname()[1]}"
        return sockets

    def _bind_grpc(self) -> None:
        from .grpc_app import build_grpc_server
        o = self.options
        host = o.grpc_host or o.host
        self._grpc, port = build_grpc_server(self.state, host, o.grpc_port, o.max_request_bytes)
        self.urls["grpc"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    async def serve(self) -> None:
        sockets = self.bind()
        if self.options.grpc_port is not None:
            try:
                self._bind_grpc()  # bound now, serving once the models are loaded
            except BaseException:
                for s in sockets:
                    s.close()
                raise
        apps = self._apps()
        by_port = {s.getsockname()[1]: a for s, a in zip(sockets, apps)}
        config = uvicorn.Config(self._dispatcher(by_port), lifespan="on", log_level=self.options.log_level,
                                access_log=False, timeout_graceful_shutdown=self.options.graceful_timeout_s,
                                limit_concurrency=None, timeout_keep_alive=30)
        self._uvicorn = _Uvicorn(config)
        try:
            await self._uvicorn.serve(sockets=sockets)
        finally:
            if self._grpc is not None:
                await self._grpc.stop(0)  # no-op after the graceful stop; frees the port after a failed start
        if not self._uvicorn.started:
            raise RuntimeError("the server did not start (see the log above)")

    def run(self) -> int:
        try:
            asyncio.run(self.serve())
        except (RuntimeError, OSError) as e:
            print(f"ember-serve: {e}", file=sys.stderr)
            return 1
        return 0

    def shutdown(self) -> None:
        """Ask a running server to stop gracefully (from any thread)."""
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
