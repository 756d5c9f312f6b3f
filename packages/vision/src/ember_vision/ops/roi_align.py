"""RoI Align (torchvision.ops.roi_align), after He et al., "Mask R-CNN"
(https://arxiv.org/abs/1703.06870): bilinear samples averaged over each output bin.

Bilinear sampling is separable: for one box, output ``[C, PH, PW]`` is ``Ay @ X @ Ax^T``
with ``Ay [PH, H]`` (summed row weights of every sample of a bin) and ``Ax [PW, W]``.
Written with ember matmuls, the input gradient (and its higher orders) comes from autograd.
Also home of the box-argument helpers that RoIPool shares.
"""

from __future__ import annotations

import ember
from ember import nn

__all__ = ["roi_align", "RoIAlign"]


def check_roi_boxes_shape(boxes) -> None:
    """``boxes`` is a ``[K, 5]`` tensor or a list of ``[L, 4]`` tensors; AssertionError
    otherwise (as torchvision's check)."""
    if isinstance(boxes, (list, tuple)):
        for t in boxes:
            if t.dim() != 2 or t.shape[1] != 4:
                raise AssertionError("The shape of the tensor in the boxes list is not correct as "
                                     f"List[Tensor[L, 4]]; got {tuple(t.shape)}")
    elif isinstance(boxes, ember.Tensor):
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise AssertionError(f"The boxes tensor shape is not correct as Tensor[K, 5]; got {tuple(boxes.shape)}")
    else:
        raise AssertionError(f"boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]; "
                             f"got {type(boxes).__name__}")


def rois_of(boxes):
    """``[K, 5]`` rows ``(batch_index, x1, y1, x2, y2)`` from either box form (detached:
    neither op is differentiable in the boxes, as in torchvision)."""
    if isinstance(boxes, ember.Tensor):
        return boxes.detach()
    ids = [ember.full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    return ember.cat([ember.cat(ids, dim=0), ember.cat(list(boxes), dim=0)], dim=1).detach()


def pair(output_size) -> tuple[int, int]:
    if isinstance(output_size, int):
        return output_size, output_size
    h, w = output_size
    return int(h), int(w)


def check_input(input, rois) -> None:
    if input.dim() != 4:
        raise RuntimeError(f"input should be a 4d tensor [N, C, H, W], got {input.dim()} dimensions")
    if input.dtype != rois.dtype:
        raise RuntimeError("Expected tensor for input to have the same type as tensor for rois; "
                           f"got {input.dtype} and {rois.dtype}")


def per_image(input, batch, compute):
    """Run ``compute(image [C, H, W], rows)`` for the rows of each batch index and put
    the results back in row order (a loop over images, not over boxes)."""
    outs, rows = [], []
    for n in sorted(set(batch.tolist())):
        sel = ember.where(batch == n)[0]
        outs.append(compute(input[n], sel))
        rows.append(sel)
    if len(outs) == 1:  # every box on one image: already in order, no copy
        return outs[0]
    out = ember.cat(outs, dim=0)
    inverse = ember.argsort(ember.cat(rows, dim=0))
    return out[inverse]


def _axis_weights(start, bin_size, grid, pooled: int, size: int):
    """``[K, pooled, size]``: for each box and bin, the bilinear weight of every pixel
    row (or column) summed over the bin's ``grid`` sample positions along this axis."""
    k = start.shape[0]
    g_max = int(grid.max()) if k else 0
    if g_max <= 0:
        return ember.zeros((k, pooled, size), dtype=start.dtype, device=start.device)
    dtype, dev = start.dtype, start.device
    p = ember.arange(pooled, device=dev).to(dtype)[None, :, None]
    g = ember.arange(g_max, device=dev)[None, None, :]
    gridf = grid.to(dtype)[:, None, None]
    bs = bin_size[:, None, None]
    # torchvision's order of operations, so float32 positions agree; a box with no samples
    # (grid 0) is masked out below, the clamp only keeps its positions finite.
    coord = start[:, None, None] + p * bs + (g.to(dtype) + 0.5) * bs / gridf.clamp(min=1)  # [K, P, G]
    valid = (g < grid[:, None, None]) & (coord >= -1.0) & (coord <= size)
    coord = coord.clamp(min=0)
    low = coord.floor().long()
    edge = low >= size - 1
    low = ember.where(edge, size - 1, low)
    high = ember.where(edge, size - 1, low + 1)
    coord = ember.where(edge, low.to(dtype), coord)
    frac = coord - low.to(dtype)
    validf = valid.to(dtype)
    pixels = ember.arange(size, device=dev)
    w = ((validf * (1 - frac))[..., None] * (low[..., None] == pixels).to(dtype)
         + (validf * frac)[..., None] * (high[..., None] == pixels).to(dtype))
    return w.sum(dim=2)


def roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False):
    """Average of bilinear samples over each of ``output_size`` bins of every box.

    Args:
        input: ``[N, C, H, W]`` floating feature map.
        boxes: ``[K, 5]`` rows ``(batch_index, x1, y1, x2, y2)``, or a list of ``[L, 4]``
            ``xyxy`` tensors, one per image; same dtype as ``input``.
        output_size: ``int`` or ``(PH, PW)``.
        spatial_scale: factor from box coordinates to ``input`` pixels (e.g. 1/16).
        sampling_ratio: samples per bin along each axis; ``<= 0`` means
            ``ceil(box_size / output_size)`` per box.
        aligned: shift box coordinates by -0.5 pixel (the pixel-centre convention of
            Detectron2); when False, boxes smaller than one pixel are enlarged to one.
    Returns:
        ``[K, C, PH, PW]`` in ``input``'s dtype; differentiable w.r.t. ``input`` only.
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

    offset = 0.5 if aligned else 0.0
    x1 = rois[:, 1] * spatial_scale - offset
    y1 = rois[:, 2] * spatial_scale - offset
    roi_w = rois[:, 3] * spatial_scale - offset - x1
    roi_h = rois[:, 4] * spatial_scale - offset - y1
    if not aligned:
        roi_w = roi_w.clamp(min=1.0)
        roi_h = roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / ph, roi_w / pw
    if sampling_ratio > 0:
        grid_h = ember.full((k,), sampling_ratio, dtype=ember.int64, device=input.device)
        grid_w = grid_h
    else:
        grid_h = (roi_h / ph).ceil().long().clamp(min=0)
        grid_w = (roi_w / pw).ceil().long().clamp(min=0)
    count = (grid_h * grid_w).clamp(min=1).to(input.dtype)
    ay = _axis_weights(y1, bin_h, grid_h, ph, h)  # [K, PH, H]
    ax = _axis_weights(x1, bin_w, grid_w, pw, w) / count[:, None, None]  # [K, PW, W]

    def pool(image, sel):
        rows = ay[sel][:, None] @ image[None]  # [Kn, C, PH, W]
        return rows @ ax[sel].transpose(1, 2)[:, None]  # [Kn, C, PH, PW]

    return per_image(input, rois[:, 0].long(), pool)


class RoIAlign(nn.Module):
    """Module form of :func:`roi_align` (torchvision.ops.RoIAlign); ``forward(input, rois)``
    with ``input`` ``[N, C, H, W]`` and ``rois`` ``[K, 5]`` (or a list of ``[L, 4]``) gives
    ``[K, C, PH, PW]``.

    Args:
        output_size: ``int`` or ``(PH, PW)`` bins per box.
        spatial_scale: factor from box coordinates to ``input`` pixels (e.g. 1/16).
        sampling_ratio: samples per bin along each axis; ``<= 0`` adapts to each box.
        aligned: shift box coordinates by -0.5 pixel (the pixel-centre convention).
    """

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")
