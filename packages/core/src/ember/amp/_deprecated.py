"""torch's deprecated per-device spellings of autocast and GradScaler (``torch.cuda.amp``,
``torch.cpu.amp``): the same classes bound to one device type, with torch's FutureWarning;
and of the autocast state functions (``torch.is_autocast_cpu_enabled()`` ...), which read
and set the per-device state with torch's DeprecationWarning."""

from __future__ import annotations

import warnings

from .. import _autocast
from .. import _dtype as D
from .autocast_mode import autocast as _Autocast
from .grad_scaler import GradScaler as _GradScaler


def spellings(device_type: str):
    """(autocast, GradScaler) as ``torch.<device_type>.amp`` defines them."""

    def warn(name):
        warnings.warn(f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                      f"`torch.amp.{name}('{device_type}', args...)` instead.", FutureWarning, stacklevel=3)

    class autocast(_Autocast):  # noqa: N801  (torch's name)
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warn("autocast")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warn("GradScaler")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__, cls.__qualname__ = f"ember.{device_type}.amp", cls.__name__
    return autocast, GradScaler


_ARGUMENT_DOCS = {
    "set_enabled": " ``enabled`` (a bool; TypeError otherwise) turns autocast on or off for that device type.",
    "set_dtype": " ``dtype`` (an ember dtype; TypeError otherwise) is the lower precision autocast runs ops in.",
}


def _state_functions():
    """{name: function} for the four deprecated state functions of each spelling: the
    'gpu' spelling means cuda; 'ipu' and 'xla' hold state only."""

    def make(spelling, device_type):
        def deprecated(old, new):
            warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning,
                          stacklevel=3)

        def is_enabled():
            deprecated(f"is_autocast_{spelling}_enabled()", f"is_autocast_enabled('{device_type}')")
            return _autocast.state.enabled[device_type]

        def set_enabled(enabled):
            deprecated(f"set_autocast_{spelling}_enabled(enabled)",
                       f"set_autocast_enabled('{device_type}', enabled)")
            if not isinstance(enabled, bool):
                raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
            _autocast.set_enabled(device_type, enabled)

        def get_dtype():
            deprecated(f"get_autocast_{spelling}_dtype()", f"get_autocast_dtype('{device_type}')")
            return _autocast.state.dtype[device_type]

        def set_dtype(dtype):
            deprecated(f"set_autocast_{spelling}_dtype(dtype)", f"set_autocast_dtype('{device_type}', dtype)")
            if not isinstance(dtype, D.dtype):
                raise TypeError(f"dtype must be an ember.dtype (got {type(dtype).__name__})")
            _autocast.state.dtype[device_type] = dtype

        found = {}
        for fn, name in ((is_enabled, f"is_autocast_{spelling}_enabled"),
                         (set_enabled, f"set_autocast_{spelling}_enabled"),
                         (get_dtype, f"get_autocast_{spelling}_dtype"),
                         (set_dtype, f"set_autocast_{spelling}_dtype")):
            fn.__name__ = fn.__qualname__ = name
            fn.__module__ = "ember"
            fn.__doc__ = (f"Deprecated spelling of the autocast state function for '{device_type}' "
                          f"(torch.{name}; a DeprecationWarning, as torch gives): use the one taking a device "
                          "type." + _ARGUMENT_DOCS.get(name[:name.index("_")] + name[name.rindex("_"):], ""))
            found[name] = fn
        return found

    table = {}
    for spelling, device_type in (("cpu", "cpu"), ("gpu", "cuda"), ("ipu", "ipu"), ("xla", "xla")):
        table.update(make(spelling, device_type))
    # torch has no is/set_autocast_gpu_enabled spelling left
    table.pop("is_autocast_gpu_enabled")
    table.pop("set_autocast_gpu_enabled")
    return table


STATE_FUNCTIONS = _state_functions()
