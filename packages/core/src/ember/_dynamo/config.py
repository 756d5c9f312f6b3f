"""torch._dynamo.config's settings that ember's compiler reads.

``recompile_limit``: how many input signatures one compiled function records before it
runs eagerly (with one warning) for any further one; torch's default, 8.
``accumulated_recompile_limit``: the same over every compiled function together (256).
``cache_size_limit`` is torch's older name of ``recompile_limit``; both names read the same
value. ``disable``: compiled functions run eagerly, as the environment variable
``TORCH_COMPILE_DISABLE=1`` sets it for torch (and for ember).
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


class _Config(types.ModuleType):
    """Makes ``cache_size_limit`` an alias of ``recompile_limit``, as torch keeps it."""

    @property
    def cache_size_limit(self):
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value):
        self.recompile_limit = value


sys.modules[__name__].__class__ = _Config
