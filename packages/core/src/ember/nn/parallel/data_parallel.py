"""DataParallel: one module run across the GPUs of this process (torch.nn.DataParallel)."""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Wraps ``module`` (``.module``; state_dict keys gain torch's ``module.`` prefix).

    Without a GPU, ``device_ids`` is ``[]`` and the module runs as it is, as torch's does.
    With GPUs, ember runs it on ``device_ids[0]`` (torch's source device, where the module's
    parameters must be); splitting a batch across several GPUs is not done yet, and the
    outputs equal what torch's gather returns for one replica.

    ``device_ids``: the GPUs (ints or devices; all of them when None).  ``output_device``:
    where outputs would be gathered (``device_ids[0]`` when None).  ``dim``: the dim along
    which inputs would be scattered and outputs gathered.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        from ... import cuda
        self.module = module
        if not cuda.is_available():
            self.device_ids = []
            return
        ids = list(range(cuda.device_count())) if device_ids is None else [
            d if isinstance(d, int) else d.index for d in device_ids]
        self.device_ids = ids
        self.dim = dim
        self.output_device = ids[0] if output_device is None else output_device

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        device = f"cuda:{self.device_ids[0]}"
        move = lambda v: v.to(device) if hasattr(v, "to") and hasattr(v, "device") else v  # noqa: E731
        return self.module(*(move(v) for v in inputs), **{k: move(v) for k, v in kwargs.items()})
