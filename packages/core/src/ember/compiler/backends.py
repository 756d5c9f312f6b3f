"""Compiler backends: ``backend(graph_module, example_inputs) -> callable``, torch's
backend interface, so a user's own backend receives the captured ``ember.fx`` graph.

``"eager"`` and ``"aot_eager"`` run the captured graph as recorded (no code generation).
The default backend (``None``; ``"inductor"``, the name torch's scripts pass, means the
same) is ember's code generator: runs of elementwise ops and the row reductions they
feed become one generated kernel forward and one backward (``compiler/fusion``): numba
loops for CPU tensors, CUDA kernels (cupy) for cuda tensors; the rest of the graph runs
as recorded. Its gradient comes from the joint forward/backward graph (``_joint``): the
backward derived as a second graph, the forward keeping only what that graph reads. A
graph whose example inputs include a cuda tensor is fused whether or not numba is there;
otherwise, with the CPU kernels off (``EMBER_NUMBA=0``, or numba missing), it runs the
graph as ``"aot_eager"`` does.
"""

from __future__ import annotations

__all__ = ["register_backend", "lookup_backend", "list_backends", "DEFAULT"]

DEFAULT = "inductor"
_BACKENDS: dict = {}
_TAGS: dict = {}


def register_backend(compiler_fn=None, name: str | None = None, tags=()):
    """Register ``compiler_fn`` under ``name`` (default: its ``__name__``); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    _BACKENDS[name or compiler_fn.__name__] = compiler_fn
    _TAGS[name or compiler_fn.__name__] = tuple(tags)
    return compiler_fn


def lookup_backend(backend):
    """(callable, name) for a backend given by name, callable or None (the default)."""
    if backend is None:
        backend = DEFAULT
    if callable(backend):
        return backend, getattr(backend, "__name__", repr(backend))
    if not isinstance(backend, str) or backend not in _BACKENDS:
        from .._dynamo.exc import InvalidBackend
        raise InvalidBackend(backend, _BACKENDS)
    return _BACKENDS[backend], backend


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The registered backend names, without those tagged with any of ``exclude_tags``."""
    excluded = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not excluded & set(_TAGS[n]))


@register_backend(tags=("debug",))
def eager(gm, example_inputs):
    """Run the captured graph as it was recorded."""
    return gm.forward


@register_backend(tags=("debug",))
def aot_eager(gm, example_inputs):
    """Run the captured graph as it was recorded; its gradients come from the ops' own rules."""
    return gm.forward


def example_device(example_inputs) -> str:
    """"cuda" when some example input is a tensor holding a cupy array, else "cpu"."""
    from .._tensor import Tensor
    from .fusion.region import on_cuda
    return "cuda" if any(isinstance(x, Tensor) and on_cuda(x._data) for x in example_inputs) else "cpu"


@register_backend(name="inductor")
def _default(gm, example_inputs):
    device = example_device(example_inputs)
    if device == "cpu":
        from ..cpu.kernels import _runtime
        if not _runtime.enabled():
            return gm.forward
    from ._joint import partition
    from .fusion import fuse
    gm = fuse(gm, device=device)
    return partition(gm, example_inputs) or gm.forward
