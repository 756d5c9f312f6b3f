"""Request ids for requests that bring none: unique within the process and across restarts.

A random prefix drawn once per process, then a counter: no system call per request (``uuid4``
reads the kernel's random source each time, a measurable cost at thousands of requests per
second). The ids are 32 hex digits, as ``uuid4().hex`` gives, and carry no meaning.
"""

from __future__ import annotations

import itertools
import os

__all__ = ["new_request_id"]

_PREFIX = os.urandom(8).hex()
_COUNTER = itertools.count()


def new_request_id() -> str:
    """A new id, ``[0-9a-f]{32}``."""
    return f"{_PREFIX}{next(_COUNTER) & 0xFFFFFFFFFFFFFFFF:016x}"
