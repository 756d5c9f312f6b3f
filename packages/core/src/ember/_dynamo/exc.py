"""The compiler's exceptions, with torch._dynamo.exc's names."""

from __future__ import annotations

__all__ = ["TorchDynamoException", "Unsupported", "BackendCompilerFailed", "InvalidBackend"]


class TorchDynamoException(RuntimeError):
    pass


class Unsupported(TorchDynamoException):
    """A graph break where none is allowed (``fullgraph=True``), or a program capture cannot
    replay. ``reason`` says what, ``user_line`` where (``file:line``)."""

    def __init__(self, msg: str, user_line: str | None = None):
        super().__init__(msg + (f"\n  at {user_line}" if user_line else ""))
        self.reason = msg
        self.user_line = user_line


class BackendCompilerFailed(TorchDynamoException):
    def __init__(self, backend_name: str, inner: BaseException):
        super().__init__(f"backend={backend_name!r} raised:\n{type(inner).__name__}: {inner}")
        self.backend_name = backend_name
        self.inner_exception = inner


class InvalidBackend(TorchDynamoException):
    def __init__(self, name: str, known):
        super().__init__(f"Invalid backend: {name!r}, see `ember._dynamo.list_backends()` for available backends "
                         f"({', '.join(sorted(known))})")
