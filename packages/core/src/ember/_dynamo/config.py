"""torch._dynamo.config's settings that ember's compiler reads.

``recompile_limit``: how many input signatures one compiled function records before it
runs eagerly (with one warning) for any further one; torch's default, 8.
``accumulated_recompile_limit``: the same over every compiled function together (256).
``cache_size_limit`` is torch's older name of ``recompile_limit``; both names read the same
value. ``disable``: compiled functions run eagerly, as the environment variable
``TORCH_COMPILE_DISABLE=1`` sets it for torch (and for ember).
``automatic_dynamic_shapes``: with ``dynamic=None``, a recompile caused by a changed size
records with the dims that changed dynamic (torch's default, True; the environment
variable ``TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES=0`` turns it off, as for torch).
``specialize_float``: Python float arguments are always constants of the graph, guarded by
value where the program uses them (torch's default, False: a float whose value changed, or
every float with ``dynamic=True``, is a graph input instead).
"""

from __future__ import annotations

import os
import sys
import types

disable = os.environ.get("TORCH_COMPILE_DISABLE", "0").lower() in ("1", "true")
recompile_limit = 8
accumulated_recompile_limit = 256
suppress_errors = False
verbose = False
automatic_dynamic_shapes = os.environ.get("TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES", "1") == "1"
assume_static_by_default = True  # dims are static until marked or seen to change, as torch's
specialize_float = False


class _Config(types.ModuleType):
    """Makes ``cache_size_limit`` an alias of ``recompile_limit``, as torch keeps it."""

    @property
    def cache_size_limit(self):
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value):
        self.recompile_limit = value


sys.modules[__name__].__class__ = _Config
