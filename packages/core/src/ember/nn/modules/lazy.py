"""Lazy modules: layers whose input size is read from the first input
(torch.nn.modules.lazy and the Lazy* layers of linear, conv and batchnorm).

Until the first forward, parameters are UninitializedParameter (buffers
UninitializedBuffer); the first call materializes them with the input's size, runs
``reset_parameters`` and turns the module into its ordinary class (LazyLinear becomes
Linear).  Loading a state_dict into an uninitialized module materializes it from the
checkpoint's shapes."""

from __future__ import annotations

import itertools

from ...autograd.grad_mode import no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d
from .conv import Conv1d, Conv2d, Conv3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyBatchNorm1d",
           "LazyBatchNorm2d"]


class LazyModuleMixin:
    """Mixin for modules that infer parameter shapes from their first input; subclasses
    define ``initialize_parameters(*args, **kwargs)`` and may set ``cls_to_become``
    (torch.nn.modules.lazy.LazyModuleMixin)."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized placeholders go into the state dict as they are (they cannot be detached)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if param is not None and key in state_dict and is_lazy(param) and not is_lazy(state_dict[key]):
                with no_grad():
                    param.materialize(tuple(state_dict[key].shape))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the parameters from the first input's shape."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _fk(device, dtype):
    return {"device": device, "dtype": dtype}


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose ``in_features`` is the last dim of the first input ``[*, H_in]``
    (torch.nn.LazyLinear).

    ``out_features``, ``bias``, ``device``, ``dtype``: as for Linear; weight and bias are
    UninitializedParameter until the first forward.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**_fk(device, dtype))
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**_fk(device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        self.weight = UninitializedParameter(**_fk(device, dtype))
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**_fk(device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input) -> int:
        n = self._n + 1
        if input.dim() not in (n, n + 1):
            raise RuntimeError(f"Expected {n}D (unbatched) or {n + 1}D (batched) input to {self.__class__.__name__}, "
                               f"but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == n + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                self.weight.materialize((self.out_channels, self.in_channels // self.groups) + self.kernel_size)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


class LazyConv1d(_LazyConvMixin, Conv1d):
    """Conv1d whose ``in_channels`` is read from the first input ``[N, C_in, L]`` or ``[C_in, L]``
    (torch.nn.LazyConv1d).

    ``out_channels``, ``kernel_size``, ``stride``, ``padding``, ``dilation``, ``groups``,
    ``bias``, ``padding_mode``, ``device``, ``dtype``: as for Conv1d (``groups`` must divide the
    input channels, ValueError at the first forward); the parameters are
    UninitializedParameter until then.  RuntimeError for a first input of another number of
    dims.
    """

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvMixin, Conv2d):
    """Conv2d whose ``in_channels`` is read from the first input ``[N, C_in, H, W]`` or
    ``[C_in, H, W]`` (torch.nn.LazyConv2d).

    ``out_channels``, ``kernel_size``, ``stride``, ``padding``, ``dilation``, ``groups``,
    ``bias``, ``padding_mode``, ``device``, ``dtype``: as for Conv2d (``groups`` must divide the
    input channels, ValueError at the first forward); the parameters are
    UninitializedParameter until then.  RuntimeError for a first input of another number of
    dims.
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvMixin, Conv3d):
    """Conv3d whose ``in_channels`` is read from the first input ``[N, C_in, D, H, W]`` or
    ``[C_in, D, H, W]`` (torch.nn.LazyConv3d).

    ``out_channels``, ``kernel_size``, ``stride``, ``padding``, ``dilation``, ``groups``,
    ``bias``, ``padding_mode``, ``device``, ``dtype``: as for Conv3d (``groups`` must divide the
    input channels, ValueError at the first forward); the parameters are
    UninitializedParameter until then.  RuntimeError for a first input of another number of
    dims.
    """

    cls_to_become = Conv3d


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None) -> None:
        super().__init__(0, eps, momentum, affine, track_running_stats, device=device, dtype=dtype)
        if self.affine:
            self.weight = UninitializedParameter(**_fk(device, dtype))
            self.bias = UninitializedParameter(**_fk(device, dtype))
        if self.track_running_stats:
            self.running_mean = UninitializedBuffer(**_fk(device, dtype))
            self.running_var = UninitializedBuffer(**_fk(device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for name in ("weight", "bias", "running_mean", "running_var"):
                    t = getattr(self, name)
                    if t is not None and is_lazy(t):
                        t.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormMixin, BatchNorm1d):
    """BatchNorm1d whose ``num_features`` is dim 1 of the first input ``[N, C]`` or ``[N, C, L]``
    (torch.nn.LazyBatchNorm1d).

    ``eps``, ``momentum``, ``affine``, ``track_running_stats``, ``device``, ``dtype``: as for
    BatchNorm1d; weight, bias and running statistics are uninitialized placeholders until the first
    forward.
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormMixin, BatchNorm2d):
    """BatchNorm2d whose ``num_features`` is dim 1 of the first input ``[N, C, H, W]``
    (torch.nn.LazyBatchNorm2d).

    ``eps``, ``momentum``, ``affine``, ``track_running_stats``, ``device``, ``dtype``: as for
    BatchNorm2d; weight, bias and running statistics are uninitialized placeholders until the first
    forward.
    """

    cls_to_become = BatchNorm2d
