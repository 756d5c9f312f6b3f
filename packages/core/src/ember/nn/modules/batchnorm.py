"""Batch normalisation: BatchNorm1d/2d/3d and SyncBatchNorm (torch.nn.modules.batchnorm), and
the parameter/buffer layout they share with the instance norms."""

from __future__ import annotations

from ... import _dtype as D
from ...ops.creation import empty, ones, tensor, zeros
from ...ops.norm import batch_norm as _batch_norm
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """weight/bias ``[C]`` (when ``affine``) and running_mean/running_var ``[C]`` plus
    num_batches_tracked (when ``track_running_stats``), registered as torch's are."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        self._bias = bias and affine
        if affine:
            self.weight = Parameter(empty(num_features, **fk))
            if bias:
                self.bias = Parameter(empty(num_features, **fk))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **fk))
            self.register_buffer("running_var", ones(num_features, **fk))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # checkpoints written before num_batches_tracked existed (version < 2) load with 0
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else tensor(0, dtype=D.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self._bias}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """In training: normalise with the batch statistics over every dim but the channel dim
    1 and update the running ones (``momentum=None``: cumulative average over
    num_batches_tracked); in eval: normalise with the running statistics, or the batch's
    when they are not tracked."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)  # an op, so that a compiled module's replay counts too
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return _batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                           self.weight, self.bias, use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over ``[N, C]`` or ``[N, C, L]``, per channel C (torch.nn.BatchNorm1d; Ioffe &
    Szegedy, 2015, arXiv:1502.03167).  ValueError for other input dims, and in training for one
    value per channel.

    ``num_features``: C.  ``eps``: added to the variance before the square root.
    ``momentum``: running statistics update as ``(1 - momentum) * running + momentum * batch``
    (the batch variance unbiased there, biased in the normalisation); None gives the
    cumulative average.  ``affine``: learn ``weight`` (ones) and ``bias`` (zeros) ``[C]``;
    ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``: keep
    running_mean, running_var ``[C]`` and the int64 num_batches_tracked (else batch
    statistics in eval too).  ``device``, ``dtype``: of the parameters and buffers.  Output:
    the input's shape.
    """

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over ``[N, C, H, W]``, per channel C (torch.nn.BatchNorm2d; arXiv:1502.03167).
    ValueError for other input dims, and in training for one value per channel.

    ``num_features``: C.  ``eps``: added to the variance before the square root.
    ``momentum``: running statistics update as ``(1 - momentum) * running + momentum * batch``
    (the batch variance unbiased there, biased in the normalisation); None gives the
    cumulative average.  ``affine``: learn ``weight`` (ones) and ``bias`` (zeros) ``[C]``;
    ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``: keep
    running_mean, running_var ``[C]`` and the int64 num_batches_tracked (else batch
    statistics in eval too).  ``device``, ``dtype``: of the parameters and buffers.  Output:
    the input's shape.
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``[N, C, D, H, W]``, per channel C (torch.nn.BatchNorm3d;
    arXiv:1502.03167).  ValueError for other input dims, and in training for one value per
    channel.

    ``num_features``: C.  ``eps``: added to the variance before the square root.
    ``momentum``: running statistics update as ``(1 - momentum) * running + momentum * batch``
    (the batch variance unbiased there, biased in the normalisation); None gives the
    cumulative average.  ``affine``: learn ``weight`` (ones) and ``bias`` (zeros) ``[C]``;
    ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``: keep
    running_mean, running_var ``[C]`` and the int64 num_batches_tracked (else batch
    statistics in eval too).  ``device``, ``dtype``: of the parameters and buffers.  Output:
    the input's shape.
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm over ``[N, C, *]`` whose batch statistics would be reduced across the
    processes of ``process_group`` (torch.nn.SyncBatchNorm).  Without distributed
    training (one process) it computes exactly what BatchNorm does.  ValueError for input
    of fewer than 2 dims or no channels.

    ``num_features``: C.  ``eps``: added to the variance before the square root.
    ``momentum``: running statistics update as ``(1 - momentum) * running + momentum * batch``
    (the batch variance unbiased there, biased in the normalisation); None gives the
    cumulative average.  ``affine``: learn ``weight`` (ones) and ``bias`` (zeros) ``[C]``;
    ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``: keep
    running_mean, running_var ``[C]`` and the int64 num_batches_tracked (else batch
    statistics in eval too).  ``device``, ``dtype``: of the parameters and buffers.  Output:
    the input's shape.  ``process_group``: the group whose statistics would be shared (None: the world).
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d inside replaced by a SyncBatchNorm sharing its
        parameters, buffers and training flag (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group, bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
