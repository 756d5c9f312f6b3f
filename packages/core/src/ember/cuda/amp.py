"""``ember.cuda.amp``: torch.cuda.amp's deprecated spellings of ``ember.amp.autocast("cuda")``
and ``ember.amp.GradScaler("cuda")``, with torch's FutureWarning."""

from __future__ import annotations

import warnings

from ..amp import custom_bwd as _custom_bwd
from ..amp import custom_fwd as _custom_fwd
from ..amp._deprecated import spellings

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]

autocast, GradScaler = spellings("cuda")


def custom_fwd(fwd=None, *, cast_inputs=None):
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _custom_bwd(bwd, device_type="cuda")
