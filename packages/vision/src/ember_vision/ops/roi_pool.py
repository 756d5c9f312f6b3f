"""RoI max pooling (torchvision.ops.roi_pool), after Girshick, "Fast R-CNN"
(https://arxiv.org/abs/1504.08083): boxes are rounded to whole pixels and each of the
``output_size`` bins takes the maximum of the pixels it covers.

The winning pixel of every bin is found without autograd (first maximum in row-major
order, as torchvision's kernel), then gathered from the input with an ember index, so
the input gradient flows to exactly that pixel.
"""

from __future__ import annotations

import ember
from ember import nn

from .roi_align import check_input, check_roi_boxes_shape, pair, per_image, rois_of

__all__ = ["roi_pool", "RoIPool"]


def _round_half_away(x):
    # C's round(): halves go away from zero (numpy and ember round to even).
    return x.sign() * (x.abs() + 0.5).floor()


def _bin_edges(start, length, pooled: int, size: int):
    """``(begin, end)`` int64 ``[K, pooled]``: the pixel range of every bin, clipped to the map."""
    dtype = length.dtype
    bin_size = length / pooled
    p = ember.arange(pooled, device=start.device).to(dtype)[None, :]
    begin = (p * bin_size[:, None]).floor().long() + start[:, None]
    end = ((p + 1) * bin_size[:, None]).ceil().long() + start[:, None]
    return begin.clamp(0, size), end.clamp(0, size)


def roi_pool(input, boxes, output_size, spatial_scale: float = 1.0):
    """Max over the pixels of each of ``output_size`` bins of every (pixel-rounded) box.

    Args:
        input: ``[N, C, H, W]`` floating feature map.
        boxes: ``[K, 5]`` rows ``(batch_index, x1, y1, x2, y2)``, or a list of ``[L, 4]``
            ``xyxy`` tensors, one per image; same dtype as ``input``.
        output_size: ``int`` or ``(PH, PW)``.
        spatial_scale: factor from box coordinates to ``input`` pixels.
    Returns:
        ``[K, C, PH, PW]`` in ``input``'s dtype; empty bins (outside the map) are 0.
        Differentiable w.r.t. ``input``.
    Raises:
        AssertionError: malformed ``boxes``. RuntimeError: ``input`` not 4-d, or dtypes differ.
    """
    check_roi_boxes_shape(boxes)
    rois = rois_of(boxes)
    check_input(input, rois)
    ph, pw = pair(output_size)
    _, c, h, w = input.shape
    k = rois.shape[0]
    if k == 0:
        return ember.zeros((0, c, ph, pw), dtype=input.dtype, device=input.device)

    x1 = _round_half_away(rois[:, 1] * spatial_scale).long()
    y1 = _round_half_away(rois[:, 2] * spatial_scale).long()
    x2 = _round_half_away(rois[:, 3] * spatial_scale).long()
    y2 = _round_half_away(rois[:, 4] * spatial_scale).long()
    roi_w = (x2 - x1 + 1).clamp(min=1).to(input.dtype)
    roi_h = (y2 - y1 + 1).clamp(min=1).to(input.dtype)
    h0, h1 = _bin_edges(y1, roi_h, ph, h)  # [K, PH]
    w0, w1 = _bin_edges(x1, roi_w, pw, w)  # [K, PW]
    span_h = max(int((h1 - h0).max()), 1)
    span_w = max(int((w1 - w0).max()), 1)
    dev = input.device
    hidx = h0[:, :, None] + ember.arange(span_h, device=dev)  # [K, PH, Sh]
    widx = w0[:, :, None] + ember.arange(span_w, device=dev)  # [K, PW, Sw]
    hval, wval = hidx < h1[:, :, None], widx < w1[:, :, None]
    hidx, widx = hidx.clamp(0, h - 1), widx.clamp(0, w - 1)
    empty = ((h1 <= h0)[:, :, None] | (w1 <= w0)[:, None, :])  # [K, PH, PW]

    def pool(image, sel):
        hi = hidx[sel][:, :, None, :, None]  # [Kn, PH, 1, Sh, 1]
        wi = widx[sel][:, None, :, None, :]  # [Kn, 1, PW, 1, Sw]
        inside = hval[sel][:, :, None, :, None] & wval[sel][:, None, :, None, :]
        flat_hw = (hi * w + wi).expand(-1, -1, -1, span_h, span_w)  # [Kn, PH, PW, Sh, Sw]
        flat_hw = flat_hw.reshape(*flat_hw.shape[:3], span_h * span_w)
        inside = inside.expand(-1, ph, pw, -1, -1).reshape(flat_hw.shape)
        pixels = image.reshape(c, h * w)
        with ember.no_grad():
            vals = pixels.detach()[:, flat_hw]  # [C, Kn, PH, PW, S]
            vals = ember.where(inside, vals, float("-inf"))
            best = vals.argmax(dim=-1, keepdim=True)  # first maximum
            winner = ember.gather(flat_hw.expand(c, *flat_hw.shape), -1, best).squeeze(-1)
        out = ember.gather(pixels, 1, winner.reshape(c, -1)).reshape(winner.shape)  # [C, Kn, PH, PW]
        out = ember.where(empty[sel], ember.zeros((), dtype=out.dtype, device=dev), out)
        return out.permute(1, 0, 2, 3)

    return per_image(input, rois[:, 0].long(), pool)


class RoIPool(nn.Module):
    """Module form of :func:`roi_pool` (torchvision.ops.RoIPool); ``forward(input, rois)``
    with ``input`` ``[N, C, H, W]`` and ``rois`` ``[K, 5]`` (or a list of ``[L, 4]``) gives
    ``[K, C, PH, PW]``.

    Args:
        output_size: ``int`` or ``(PH, PW)`` bins per box.
        spatial_scale: factor from box coordinates to ``input`` pixels (e.g. 1/16).
    """

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"
