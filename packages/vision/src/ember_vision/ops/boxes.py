"""Box utilities (torchvision.ops.boxes): format conversion, areas, pairwise IoU and
generalized IoU, clipping, small-box removal, and greedy non-maximum suppression.

Boxes are ``[..., 4]`` tensors; ``xyxy`` is ``(x1, y1, x2, y2)`` with ``x1 <= x2``,
``y1 <= y2``. Source: https://pytorch.org/vision/stable/ops.html; generalized IoU after
Rezatofighi et al., https://arxiv.org/abs/1902.09630.
"""

from __future__ import annotations

import numpy as np

import ember

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert", "box_area",
           "box_iou", "generalized_box_iou"]

_AXIS_ALIGNED = ("xyxy", "xywh", "cxcywh")
_ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")


def _upcast(t):
    # Products of coordinates overflow small types: float16/bfloat16 -> float32, small ints -> int32.
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _to_xyxy(boxes, fmt: str):
    if fmt == "xyxy":
        return boxes
    a, b, c, d = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((a, b, a + c, b + d), dim=-1)
    return ember.stack((a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d), dim=-1)  # cxcywh


def _from_xyxy(boxes, fmt: str):
    if fmt == "xyxy":
        return boxes
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return ember.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    return ember.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)  # cxcywh


def box_convert(boxes, in_fmt: str, out_fmt: str):
    """Convert ``boxes`` ``[..., 4]`` from ``in_fmt`` to ``out_fmt``, each one of ``'xyxy'``,
    ``'xywh'`` (corner, width, height) and ``'cxcywh'`` (centre, width, height)
    (torchvision.ops.box_convert). Same dtype (true division for the centre follows torch's
    promotion). Same formats return a clone.

    Raises:
        ValueError: a format outside torchvision's list.
        NotImplementedError: the rotated formats (``'xywhr'``, ``'cxcywhr'``,
            ``'xyxyxyxy'``), which torchvision accepts but ember does not implement yet.
    """
    allowed = _AXIS_ALIGNED + _ROTATED
    if in_fmt not in allowed or out_fmt not in allowed:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt in _ROTATED or out_fmt in _ROTATED:
        raise NotImplementedError(f"box_convert: rotated formats are not supported, got {in_fmt} -> {out_fmt}")
    return _from_xyxy(_to_xyxy(boxes, in_fmt), out_fmt)


def box_area(boxes, fmt: str = "xyxy"):
    """Areas ``[...]`` of ``boxes`` ``[..., 4]`` in ``fmt`` (``'xyxy'``, ``'xywh'``, ``'cxcywh'``)
    (torchvision.ops.box_area).

    float16/bfloat16 boxes give float32, int8/int16/uint8 give int32 (overflow guard).
    Raises ValueError for another format.
    """
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _corners(boxes, fmt: str):
    """``(top-left, bottom-right)`` ``[..., 2]`` each, in the arithmetic torchvision uses."""
    if fmt == "xyxy":
        return boxes[..., :2], boxes[..., 2:]
    if fmt == "xywh":
        return boxes[..., :2], boxes[..., :2] + boxes[..., 2:]
    return boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2


def _box_inter_union(boxes1, boxes2, fmt: str = "xyxy"):
    area1 = box_area(boxes1, fmt=fmt)
    area2 = box_area(boxes2, fmt=fmt)
    lt1, rb1 = _corners(boxes1, fmt)
    lt2, rb2 = _corners(boxes2, fmt)
    lt = ember.maximum(lt1[..., :, None, :], lt2[..., None, :, :])  # [..., N, M, 2]
    rb = ember.minimum(rb1[..., :, None, :], rb2[..., None, :, :])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1[..., :, None] + area2[..., None, :] - inter
    return inter, union


def box_iou(boxes1, boxes2, fmt: str = "xyxy"):
    """Pairwise intersection over union of ``boxes1`` ``[..., N, 4]`` and ``boxes2``
    ``[..., M, 4]``, both in ``fmt`` (``'xyxy'``, ``'xywh'``, ``'cxcywh'``) -> ``[..., N, M]``
    (floating; integer boxes give float32; torchvision.ops.box_iou). Degenerate pairs (zero
    union) give NaN.

    Raises:
        ValueError: an unknown format.
        NotImplementedError: the rotated formats (torchvision computes those with a kernel
            ember does not have).
    """
    if fmt in _ROTATED:
        raise NotImplementedError(f"box_iou: rotated format {fmt!r} is not supported")
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported format '{fmt}'. Supported axis-aligned formats: {_AXIS_ALIGNED}. "
                         f"Supported rotated formats: {_ROTATED}.")
    inter, union = _box_inter_union(boxes1, boxes2, fmt)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """Pairwise generalized IoU (Rezatofighi et al., 2019, arXiv:1902.09630;
    torchvision.ops.generalized_box_iou) of ``xyxy`` ``boxes1`` ``[..., N, 4]`` and ``boxes2``
    ``[..., M, 4]`` -> ``[..., N, M]``, values in ``[-1, 1]``.
    """
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = ember.minimum(boxes1[..., :, None, :2], boxes2[..., None, :, :2])
    rbi = ember.maximum(boxes1[..., :, None, 2:], boxes2[..., None, :, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai


def clip_boxes_to_image(boxes, size):
    """Clamp ``xyxy`` ``boxes`` ``[..., 4]`` into an image of ``size = (height, width)``
    pixels: x to ``[0, width]``, y to ``[0, height]``. Same shape and dtype
    (torchvision.ops.clip_boxes_to_image).
    """
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((x, y), dim=boxes.dim()).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size: float):
    """int64 indices ``[K]`` of the ``xyxy`` ``boxes`` ``[N, 4]`` whose width and height are
    both at least ``min_size`` (torchvision.ops.remove_small_boxes).
    """
    ws = boxes[..., 2] - boxes[..., 0]
    hs = boxes[..., 3] - boxes[..., 1]
    return ember.where((ws >= min_size) & (hs >= min_size))[0]


def _check_nms_args(boxes, scores):
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have 2 dimensions and 4 columns, got shape {tuple(boxes.shape)}")
    if scores.dim() != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.dim()} dimensions")
    if boxes.shape[0] != scores.shape[0]:
        raise RuntimeError(f"boxes and scores should have the same number of elements in dimension 0, "
                           f"got {boxes.shape[0]} and {scores.shape[0]}")


def nms(boxes, scores, iou_threshold: float):
    """Greedy non-maximum suppression: visit boxes by decreasing score and drop every later
    box whose IoU with a kept one is greater than ``iou_threshold``.

    Args:
        boxes: ``[N, 4]`` ``xyxy`` boxes (floating).
        scores: ``[N]`` scores.
        iou_threshold: IoU above which the lower-scored box is discarded.
    Returns:
        int64 ``[K]`` indices of the kept boxes, by decreasing score (ties: lower index
        first; torchvision leaves the order of equal scores unspecified).
    Raises:
        RuntimeError: boxes not ``[N, 4]``, scores not ``[N]``.
    """
    _check_nms_args(boxes, scores)
    if boxes.shape[0] == 0:
        return ember.empty((0,), dtype=ember.int64, device=boxes.device)
    keep = _greedy_nms(_host(boxes), _host(scores), iou_threshold)
    return ember.tensor(keep, device=boxes.device)


def _host(t) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy())


def _greedy_nms(b: np.ndarray, s: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices (int64) of the boxes ``b`` ``[N, 4]`` that greedy NMS keeps, by decreasing
    score ``s`` (ties: lower index first). The scan is sequential: one vectorised pass per
    kept box over the candidates still alive."""
    n = b.shape[0]
    order = np.argsort(-s, kind="stable")
    b = b[order]
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    keep = []
    alive = np.ones(n, dtype=bool)
    for i in range(n):
        if not alive[i]:
            continue
        keep.append(i)
        rest = np.arange(i + 1, n)[alive[i + 1:]]
        if rest.size == 0:
            break
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
        inter = w * h
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = inter / (areas[i] + areas[rest] - inter)
        alive[rest[iou > iou_threshold]] = False
    return order[keep].astype(np.int64)


def batched_nms(boxes, scores, idxs, iou_threshold: float):
    """:func:`nms` within each category: boxes of different ``idxs`` never suppress each
    other (up to 1000 boxes, every category is moved apart by an offset larger than all
    coordinates and one scan runs; above, one scan per category; torchvision.ops.batched_nms).

    Args:
        boxes: ``[N, 4]`` ``xyxy`` boxes (floating).
        scores: ``[N]`` scores.
        idxs: ``[N]`` integer categories.
        iou_threshold: IoU above which the lower-scored box of a category is discarded.
    Returns:
        int64 ``[K]`` indices of the kept boxes by decreasing score.
    Raises:
        RuntimeError: boxes not ``[N, 4]``, scores not ``[N]``.
    """
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64, device=boxes.device)
    if boxes.shape[0] <= _PER_CATEGORY_ABOVE:
        max_coordinate = boxes.max()
        offsets = idxs.to(boxes.dtype) * (max_coordinate + 1)
        return nms(boxes + offsets[:, None], scores, iou_threshold)
    # many boxes (a detector's candidates over dozens of classes): one scan per category is
    # much shorter than one scan over all of them (torchvision also switches, on CPU)
    _check_nms_args(boxes, scores)
    b, s, c = _host(boxes), _host(scores), _host(idxs)
    kept = []
    for k in np.unique(c):
        rows = np.flatnonzero(c == k)
        kept.append(rows[_greedy_nms(b[rows], s[rows], iou_threshold)])
    kept = np.concatenate(kept)
    kept = kept[np.lexsort((kept, -s[kept]))]  # decreasing score, ties by lower index
    return ember.tensor(kept.astype(np.int64), device=boxes.device)


_PER_CATEGORY_ABOVE = 1000  # boxes; torchvision's CPU threshold (4000 coordinates)
