"""Box encoding and anchor matching for the detectors (torchvision.models.detection._utils).

* ``BoxCoder``: boxes as offsets from reference boxes (Girshick et al., "Rich feature
  hierarchies...", https://arxiv.org/abs/1311.2524, appendix C), with per-coordinate weights.
* ``Matcher`` / ``SSDMatcher``: each anchor to the ground-truth box it overlaps most.
* ``retrieve_out_channels``: the channels of each feature map a backbone returns.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict
from typing import List, Optional, Tuple

import ember

__all__ = ["BoxCoder", "Matcher", "SSDMatcher", "retrieve_out_channels"]


class BoxCoder:
    """Encode boxes as ``(dx, dy, dw, dh)`` relative to reference boxes and decode them back.

    ``dx = wx * (gx - px) / pw``, ``dy = wy * (gy - py) / ph``, ``dw = ww * log(gw / pw)``,
    ``dh = wh * log(gh / ph)`` for centres ``(x, y)`` and sizes ``(w, h)`` of a box ``g`` and its
    reference ``p``; decoding clamps ``dw``/``dh`` (after dividing by the weights) at
    ``bbox_xform_clip`` so that ``exp`` cannot overflow.

    Args:
        weights: ``(wx, wy, ww, wh)``.
        bbox_xform_clip: largest ``dw``/``dh`` decoded (default ``log(1000 / 16)``).
    """

    def __init__(self, weights: Tuple[float, float, float, float],
                 bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes: List[ember.Tensor], proposals: List[ember.Tensor]) -> Tuple[ember.Tensor, ...]:
        """:meth:`encode_single` over lists of per-image ``[K_i, 4]`` boxes; a tuple of ``[K_i, 4]``."""
        counts = [len(b) for b in reference_boxes]
        codes = self.encode_single(ember.cat(list(reference_boxes), dim=0), ember.cat(list(proposals), dim=0))
        return codes.split(counts, 0)

    def encode_single(self, reference_boxes: ember.Tensor, proposals: ember.Tensor) -> ember.Tensor:
        """Codes ``[K, 4]`` of the ``xyxy`` boxes ``reference_boxes`` ``[K, 4]`` (the targets)
        relative to ``proposals`` ``[K, 4]``, in ``reference_boxes``' dtype."""
        wx, wy, ww, wh = (ember.tensor(w, dtype=reference_boxes.dtype, device=reference_boxes.device)
                          for w in self.weights)
        px1, py1, px2, py2 = (proposals[:, i:i + 1] for i in range(4))
        gx1, gy1, gx2, gy2 = (reference_boxes[:, i:i + 1] for i in range(4))
        pw, ph = px2 - px1, py2 - py1
        pcx, pcy = px1 + 0.5 * pw, py1 + 0.5 * ph
        gw, gh = gx2 - gx1, gy2 - gy1
        gcx, gcy = gx1 + 0.5 * gw, gy1 + 0.5 * gh
        return ember.cat((wx * (gcx - pcx) / pw, wy * (gcy - pcy) / ph,
                          ww * ember.log(gw / pw), wh * ember.log(gh / ph)), dim=1)

    def decode(self, rel_codes: ember.Tensor, boxes: List[ember.Tensor]) -> ember.Tensor:
        """Decode ``rel_codes`` against the concatenated per-image ``boxes``; ``[K, -1, 4]``.

        Raises AssertionError (torchvision's) when ``boxes`` is not a list or tuple or
        ``rel_codes`` is not a tensor.
        """
        if not isinstance(boxes, (list, tuple)):
            raise AssertionError(f"This function expects boxes of type list or tuple, got {type(boxes).__name__}.")
        if not isinstance(rel_codes, ember.Tensor):
            raise AssertionError(f"This function expects rel_codes of type Tensor, got {type(rel_codes).__name__}.")
        total = sum(b.size(0) for b in boxes)
        if total > 0:
            rel_codes = rel_codes.reshape(total, -1)
        pred = self.decode_single(rel_codes, ember.cat(list(boxes), dim=0))
        return pred.reshape(total, -1, 4) if total > 0 else pred

    def decode_single(self, rel_codes: ember.Tensor, boxes: ember.Tensor) -> ember.Tensor:
        """``xyxy`` boxes ``[K, 4 * J]`` from codes ``[K, 4 * J]`` relative to ``boxes`` ``[K, 4]``
        (cast to the codes' dtype)."""
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = ember.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = ember.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        half_w = 0.5 * (ember.exp(dw) * widths[:, None])
        half_h = 0.5 * (ember.exp(dh) * heights[:, None])
        pred = ember.stack((pred_ctr_x - half_w, pred_ctr_y - half_h, pred_ctr_x + half_w, pred_ctr_y + half_h), dim=2)
        return pred.flatten(1)


class Matcher:
    """Assign to each prediction (column of an ``[M, N]`` quality matrix, e.g. IoU of M
    ground-truth boxes with N anchors) the ground truth it matches best.

    Returns int64 ``[N]``: the matched row, ``BELOW_LOW_THRESHOLD`` (-1) when the best quality
    is below ``low_threshold``, ``BETWEEN_THRESHOLDS`` (-2) when it lies in
    ``[low_threshold, high_threshold)``. With ``allow_low_quality_matches``, the predictions
    that are the best match of some ground truth (ties included) keep their match anyway.

    Raises:
        AssertionError: ``low_threshold > high_threshold`` (torchvision's check).
        ValueError: an empty matrix (no ground truth, or no predictions).
    """

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold: float, low_threshold: float, allow_low_quality_matches: bool = False) -> None:
        if low_threshold > high_threshold:
            raise AssertionError(f"low_threshold should be <= high_threshold, got {low_threshold} > {high_threshold}")
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: ember.Tensor) -> ember.Tensor:
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ValueError("No ground-truth boxes available for one of the images during training")
            raise ValueError("No proposal boxes available for one of the images during training")
        matched_vals, all_matches = match_quality_matrix.max(dim=0)
        matches = ember.where(matched_vals < self.low_threshold, self.BELOW_LOW_THRESHOLD, all_matches)
        between = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches = ember.where(between, self.BETWEEN_THRESHOLDS, matches)
        if self.allow_low_quality_matches:
            best_per_gt = match_quality_matrix.max(dim=1)[0]
            is_best = (match_quality_matrix == best_per_gt[:, None]).any(dim=0)
            matches = ember.where(is_best, all_matches, matches)
        return matches


class SSDMatcher(Matcher):
    """:class:`Matcher` with one ``threshold`` (no between-thresholds band), then each ground
    truth forced onto the prediction it overlaps most (SSD's matching, Liu et al.,
    https://arxiv.org/abs/1512.02325, section 2.2; when two ground truths share their best
    prediction, the later one keeps it)."""

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix: ember.Tensor) -> ember.Tensor:
        matches = super().__call__(match_quality_matrix).clone()
        best_pred_per_gt = match_quality_matrix.max(dim=1)[1]
        matches[best_pred_per_gt] = ember.arange(best_pred_per_gt.size(0), dtype=ember.int64,
                                                 device=best_pred_per_gt.device)
        return matches


def retrieve_out_channels(model, size: Tuple[int, int]) -> List[int]:
    """Channels of each feature map ``model`` returns for a ``[1, 3, size[1], size[0]]`` zero
    image (a tensor, or a dict of tensors); the model's training mode is restored after."""
    was_training = model.training
    model.eval()
    with ember.no_grad():
        device = next(model.parameters()).device
        features = model(ember.zeros((1, 3, size[1], size[0]), device=device))
    if isinstance(features, ember.Tensor):
        features = OrderedDict([("0", features)])
    if was_training:
        model.train()
    return [x.size(1) for x in features.values()]


def _validate_trainable_layers(is_trained: bool, trainable_backbone_layers: Optional[int], max_value: int,
                               default_value: int) -> int:
    """The number of trainable backbone stages: ``max_value`` (with a warning if another value
    was asked) when no pretrained weights are used, else the given value or ``default_value``.

    Raises ValueError outside ``[0, max_value]``.
    """
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          "pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable", stacklevel=2)
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if not 0 <= trainable_backbone_layers <= max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                         f"got {trainable_backbone_layers}")
    return trainable_backbone_layers
