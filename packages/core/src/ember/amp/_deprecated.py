"""torch's deprecated per-device spellings of autocast and GradScaler (``torch.cuda.amp``,
``torch.cpu.amp``): the same classes bound to one device type, with torch's FutureWarning."""

from __future__ import annotations

import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def spellings(device_type: str):
    """(autocast, GradScaler) as ``torch.<device_type>.amp`` defines them."""

    def warn(name):
        warnings.warn(f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                      f"`torch.amp.{name}('{device_type}', args...)` instead.", FutureWarning, stacklevel=3)

    class autocast(_autocast):  # noqa: N801  (torch's name)
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
