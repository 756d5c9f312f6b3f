"""Instance normalisation: InstanceNorm1d/2d/3d (torch.nn.modules.instancenorm)."""

from __future__ import annotations

import warnings

from ...ops.norm import instance_norm as _instance_norm
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Normalise each channel of each sample over its spatial dims; unbatched input (no N
    dim) is accepted.  In training, or when running statistics are not tracked, the
    instance's statistics normalise (and update the running ones when tracked); in eval
    with tracked statistics, the running ones do."""

    _spatial_dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        d = self._spatial_dims
        if input.dim() not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        return _instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = self._spatial_dims + 1
        feature_dim = input.dim() - unbatched
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == unbatched:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm of ``[N, C, L]`` or ``[C, L]`` (torch.nn.InstanceNorm1d; Ulyanov et al.,
    2016, arXiv:1607.08022).  ValueError for other input dims, a single spatial element, or
    (with ``affine``) C different from ``num_features``.

    ``num_features``: C (with ``affine`` it must match the input's; otherwise a mismatch only
    warns).  ``eps``: added to the variance.  ``momentum``: update factor of the running
    statistics (None counts as 0).  ``affine``: learn ``weight`` and ``bias`` ``[C]`` (default
    False); ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``:
    keep running_mean and running_var ``[C]`` (default False) and use them in eval.
    ``device``, ``dtype``: of the parameters and buffers.  Output: the input's shape.
    """

    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm of ``[N, C, H, W]`` or ``[C, H, W]`` (torch.nn.InstanceNorm2d;
    arXiv:1607.08022).  ValueError for other input dims, a single spatial element, or (with
    ``affine``) C different from ``num_features``.

    ``num_features``: C (with ``affine`` it must match the input's; otherwise a mismatch only
    warns).  ``eps``: added to the variance.  ``momentum``: update factor of the running
    statistics (None counts as 0).  ``affine``: learn ``weight`` and ``bias`` ``[C]`` (default
    False); ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``:
    keep running_mean and running_var ``[C]`` (default False) and use them in eval.
    ``device``, ``dtype``: of the parameters and buffers.  Output: the input's shape.
    """

    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm of ``[N, C, D, H, W]`` or ``[C, D, H, W]`` (torch.nn.InstanceNorm3d;
    arXiv:1607.08022).  ValueError for other input dims, a single spatial element, or (with
    ``affine``) C different from ``num_features``.

    ``num_features``: C (with ``affine`` it must match the input's; otherwise a mismatch only
    warns).  ``eps``: added to the variance.  ``momentum``: update factor of the running
    statistics (None counts as 0).  ``affine``: learn ``weight`` and ``bias`` ``[C]`` (default
    False); ``bias=False`` (keyword-only) keeps the weight alone.  ``track_running_stats``:
    keep running_mean and running_var ``[C]`` (default False) and use them in eval.
    ``device``, ``dtype``: of the parameters and buffers.  Output: the input's shape.
    """

    _spatial_dims = 3
