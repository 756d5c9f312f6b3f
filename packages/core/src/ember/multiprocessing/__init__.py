"""torch.multiprocessing: Python's ``multiprocessing``, with tensors sent between processes
through shared memory instead of pickled copies, and ``spawn``/``start_processes``.

Everything of ``multiprocessing`` is here (``Process``, ``Queue``, ``SimpleQueue``, ``Pool``,
``get_context``, ``set_start_method``, ...). Once this module is imported, a tensor put
on a queue, passed to a process or returned through a pipe moves into shared memory (as
``Tensor.share_memory_()`` does) and the receiver maps the same memory: a
``model.share_memory()`` model trained by several processes at once (Hogwild) is one set of
parameters. Only CPU tensors cross; a non-leaf tensor that requires grad is refused, as
in torch.

Sharing strategy: ``file_descriptor`` only (an anonymous memory file whose descriptor is
sent along). torch on Linux also offers ``file_system`` (named files in ``/dev/shm``
cleaned up by a manager process); ember does not, so ``get_all_sharing_strategies()`` has
one member.
"""

import multiprocessing
from multiprocessing import *  # noqa: F403  (torch.multiprocessing re-exports it all)

from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
           "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "SpawnContext",
           *multiprocessing.__all__]

_STRATEGIES = {"file_descriptor"}
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set:
    """The sharing strategies this system supports: ``{"file_descriptor"}``."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The sharing strategy in use: ``"file_descriptor"``, the only one here."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how tensors are shared.

    Args:
        new_strategy: the strategy's name; only ``"file_descriptor"`` exists here.

    Raises:
        AssertionError: any other name, as torch gives for a strategy it does not know.
    """
    global _strategy
    assert new_strategy in _STRATEGIES, f"sharing strategy {new_strategy!r} is not supported: " \
                                        f"{sorted(_STRATEGIES)}"
    _strategy = new_strategy


init_reductions()
