"""The inference server: starlette applications on uvicorn (see ``runner``)."""

from .runner import Server, ServerOptions

__all__ = ["Server", "ServerOptions"]
