"""Operators for vision models (torchvision.ops): box utilities, RoI pooling, stochastic depth."""

from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    generalized_box_iou,
    nms,
    remove_small_boxes,
)
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool
from .stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert", "box_area", "box_iou",
           "generalized_box_iou", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "StochasticDepth",
           "stochastic_depth"]
