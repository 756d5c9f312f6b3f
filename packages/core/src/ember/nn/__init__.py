"""ember.nn: modules, parameters, functional and init, with torch.nn's API."""

from . import attention, functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "functional", "init", "utils"] + list(_modules_all)
__all__ += ["UninitializedParameter", "UninitializedBuffer", "DataParallel"]
