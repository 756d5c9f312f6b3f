"""SSD's default boxes (torchvision.models.detection.anchor_utils.DefaultBoxGenerator).

Source: Liu et al., "SSD: Single Shot MultiBox Detector", https://arxiv.org/abs/1512.02325,
section 2.2 ("Choosing scales and aspect ratios for default boxes").
"""

from __future__ import annotations

import math
from typing import List, Optional

import ember
from ember import nn

from .transform import ImageList

__all__ = ["DefaultBoxGenerator"]


class DefaultBoxGenerator(nn.Module):
    """The default boxes of SSD for a set of feature maps.

    Feature map ``k`` gets, at each cell centre, boxes of scale ``s_k`` and
    ``sqrt(s_k * s_{k+1})`` with aspect ratio 1, then for each ratio ``a`` in
    ``aspect_ratios[k]`` the boxes ``(s_k * sqrt(a), s_k / sqrt(a))`` and its transpose:
    ``2 + 2 * len(aspect_ratios[k])`` boxes per location.

    Args:
        aspect_ratios: the ratios of each feature map.
        min_ratio, max_ratio: ``s_min`` and ``s_max``; the scales are spaced evenly between them
            (then 1.0 appended) unless ``scales`` is given.
        scales: ``len(aspect_ratios) + 1`` explicit scales.
        steps: per-map stride in pixels that places the centres; default: the map's own size.
        clip: clamp widths and heights (relative to the image) to ``[0, 1]``.

    Forward: ``(image_list, feature_maps)`` -> one ``[A, 4]`` tensor of ``xyxy`` boxes in pixels of
    the batched image per image, ``A = sum_k H_k * W_k * boxes_k`` (order: map, row, column,
    box), in the feature maps' dtype.

    Raises ValueError when ``steps`` and ``aspect_ratios`` differ in length.
    """

    def __init__(self, aspect_ratios: List[List[int]], min_ratio: float = 0.15, max_ratio: float = 0.9,
                 scales: Optional[List[float]] = None, steps: Optional[List[int]] = None, clip: bool = True) -> None:
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError(f"aspect_ratios and steps should have the same length, got {len(aspect_ratios)} "
                             f"and {len(steps)}")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        num_outputs = len(aspect_ratios)
        if scales is None:
            if num_outputs > 1:
                span = max_ratio - min_ratio
                self.scales = [min_ratio + span * k / (num_outputs - 1.0) for k in range(num_outputs)]
                self.scales.append(1.0)
            else:
                self.scales = [min_ratio, max_ratio]
        else:
            self.scales = scales
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    def _generate_wh_pairs(self, num_outputs: int, dtype=ember.float32, device=None) -> List[ember.Tensor]:
        pairs = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh = [[s_k, s_k], [s_prime, s_prime]]
            for ar in self.aspect_ratios[k]:
                sq = math.sqrt(ar)
                wh.extend([[s_k * sq, s_k / sq], [s_k / sq, s_k * sq]])
            pairs.append(ember.tensor(wh, dtype=dtype, device=device))
        return pairs

    def num_anchors_per_location(self) -> List[int]:
        """Boxes per feature-map location: ``2 + 2 * len(ratios)`` for each map."""
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes, image_size, dtype=ember.float32) -> ember.Tensor:
        # (cx, cy, w, h) relative to the image, every map's boxes one after the other
        boxes = []
        for k, (fh, fw) in enumerate(grid_sizes):
            if self.steps is not None:
                x_f, y_f = image_size[1] / self.steps[k], image_size[0] / self.steps[k]
            else:
                y_f, x_f = fh, fw
            shifts_x = ((ember.arange(fw, dtype=ember.float32) + 0.5) / x_f).to(dtype)
            shifts_y = ((ember.arange(fh, dtype=ember.float32) + 0.5) / y_f).to(dtype)
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            n_boxes = len(self._wh_pairs[k])
            centres = ember.stack((shift_x.reshape(-1), shift_y.reshape(-1)), dim=-1)  # [H*W, 2]
            centres = centres[:, None, :].expand(-1, n_boxes, 2).reshape(-1, 2)
            wh = self._wh_pairs[k].to(dtype)
            if self.clip:
                wh = wh.clamp(min=0, max=1)
            wh = wh.repeat(fh * fw, 1)
            boxes.append(ember.cat((centres, wh), dim=1))
        return ember.cat(boxes, dim=0)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(aspect_ratios={self.aspect_ratios}, clip={self.clip}, "
                f"scales={self.scales}, steps={self.steps})")

    def forward(self, image_list: ImageList, feature_maps: List[ember.Tensor]) -> List[ember.Tensor]:
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        image_size = tuple(image_list.tensors.shape[-2:])
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        boxes = self._grid_default_boxes(grid_sizes, image_size, dtype=dtype).to(device)
        # (cx, cy, w, h) relative -> (x1, y1, x2, y2) in pixels of the batched image
        x_y_size = ember.tensor([image_size[1], image_size[0]], device=device)
        xyxy = ember.cat([(boxes[:, :2] - 0.5 * boxes[:, 2:]) * x_y_size,
                          (boxes[:, :2] + 0.5 * boxes[:, 2:]) * x_y_size], -1)
        return [xyxy for _ in image_list.image_sizes]
