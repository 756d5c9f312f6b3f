"""Forking after the ``tokenizers`` library has used its thread pool.

The library's Rust thread pool does not survive ``fork()``: a child that used it would
deadlock, so the library disables parallelism in the child and prints a warning, once per
forked process (so once per DataLoader worker, every epoch), unless ``TOKENIZERS_PARALLELISM``
is set. What users expect is: the parent keeps its threads, workers tokenize serially, and
nothing is printed. So, when the user has not set the variable, it is set to ``false`` just
before a fork (the child inherits it: no warning, no pool) and removed again in the parent.
A value the user set is never touched.
"""

from __future__ import annotations

import os

_VAR = "TOKENIZERS_PARALLELISM"
_set_by_us = False


def _before_fork() -> None:
    global _set_by_us
    if _VAR not in os.environ:
        os.environ[_VAR] = "false"
        _set_by_us = True


def _after_in_parent() -> None:
    global _set_by_us
    if _set_by_us:
        os.environ.pop(_VAR, None)
        _set_by_us = False


def _after_in_child() -> None:
    global _set_by_us
    _set_by_us = False  # the child keeps "false": its copy of the pool is unusable


_registered = False


def install() -> None:
    """Register the fork hooks once per process (idempotent)."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
        _registered = True
