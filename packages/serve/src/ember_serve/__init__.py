"""ember-serve: model archives and an inference server for ember models.

``create_archive`` / ``load_archive`` make and open ``.emar`` archives; ``Server`` serves them
over the Open Inference Protocol v2 (REST), TorchServe's ``/predictions`` and management
routes, and Prometheus ``/metrics``. The console scripts are ``ember-archive`` and
``ember-serve`` (also ``python -m ember_serve``).
"""

__version__ = "0.1.0"

from .archive import ArchiveError, LoadedArchive, create_archive, load_archive
from .config import ModelConfig, TensorSpec
from .handlers import BaseHandler, InvalidInput, Request, register_handler

__all__ = ["__version__", "ArchiveError", "LoadedArchive", "create_archive", "load_archive", "ModelConfig",
           "TensorSpec", "BaseHandler", "InvalidInput", "Request", "register_handler", "Server", "ServerOptions"]


def __getattr__(name):
    # the server pulls in starlette and uvicorn; archive tools do not need them
    if name in ("Server", "ServerOptions"):
        from . import server
        return getattr(server, name)
    raise AttributeError(f"module 'ember_serve' has no attribute {name!r}")
