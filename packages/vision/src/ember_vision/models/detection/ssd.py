"""The SSD meta-architecture (torchvision.models.detection.ssd): a backbone returning several
feature maps, one scoring head per map, default boxes, SSD's training loss (matching, smooth L1,
cross-entropy with hard negative mining) and its inference postprocess (per-class top-k and NMS).

Source: Liu et al., "SSD: Single Shot MultiBox Detector", https://arxiv.org/abs/1512.02325.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from . import _utils as det_utils
from .anchor_utils import DefaultBoxGenerator
from .transform import GeneralizedRCNNTransform

__all__ = ["SSD", "SSDHead", "SSDScoringHead", "SSDClassificationHead", "SSDRegressionHead"]


def _xavier_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDScoringHead(nn.Module):
    """Runs ``module_list[i]`` on feature map ``i`` (``[N, A_i * K, H_i, W_i]`` out) and
    concatenates all as ``[N, sum_i H_i * W_i * A_i, K]``, with ``num_columns`` = K the values
    per anchor (order: map, row, column, anchor; torchvision.models.detection.ssd.SSDScoringHead)."""

    def __init__(self, module_list: nn.ModuleList, num_columns: int) -> None:
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def forward(self, x: List[ember.Tensor]) -> ember.Tensor:
        results = []
        for features, module in zip(x, self.module_list):
            out = module(features)
            n, _, h, w = out.shape
            out = out.view(n, -1, self.num_columns, h, w).permute(0, 3, 4, 1, 2)
            results.append(out.reshape(n, -1, self.num_columns))
        return ember.cat(results, dim=1)


class SSDClassificationHead(SSDScoringHead):
    """One 3x3 convolution per map giving ``num_classes`` logits per anchor: map ``i`` has
    ``in_channels[i]`` channels and ``num_anchors[i]`` anchors per location; output
    ``[N, A, num_classes]`` (torchvision.models.detection.ssd.SSDClassificationHead)."""

    def __init__(self, in_channels: List[int], num_anchors: List[int], num_classes: int) -> None:
        convs = nn.ModuleList(nn.Conv2d(c, num_classes * a, kernel_size=3, padding=1)
                              for c, a in zip(in_channels, num_anchors))
        _xavier_init(convs)
        super().__init__(convs, num_classes)


class SSDRegressionHead(SSDScoringHead):
    """One 3x3 convolution per map giving 4 box codes per anchor: map ``i`` has
    ``in_channels[i]`` channels and ``num_anchors[i]`` anchors per location; output ``[N, A, 4]``
    (torchvision.models.detection.ssd.SSDRegressionHead)."""

    def __init__(self, in_channels: List[int], num_anchors: List[int]) -> None:
        convs = nn.ModuleList(nn.Conv2d(c, 4 * a, kernel_size=3, padding=1) for c, a in zip(in_channels, num_anchors))
        _xavier_init(convs)
        super().__init__(convs, 4)


class SSDHead(nn.Module):
    """SSD's head (torchvision.models.detection.ssd.SSDHead): a list of feature maps ->
    ``{"bbox_regression": [N, A, 4], "cls_logits": [N, A, num_classes]}``; map ``i`` has
    ``in_channels[i]`` channels and ``num_anchors[i]`` anchors per location, and
    ``num_classes`` counts the background class."""

    def __init__(self, in_channels: List[int], num_anchors: List[int], num_classes: int) -> None:
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x: List[ember.Tensor]) -> Dict[str, ember.Tensor]:
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSD(nn.Module):
    """Single Shot MultiBox Detector.

    Input: a list of float images ``[C, H, W]`` in [0, 1] (sizes may differ; each is resized to
    ``size``). Training mode also takes ``targets``, one dict per image with ``boxes`` (float
    ``[K, 4]``, ``xyxy`` pixels, ``0 <= x1 < x2 <= W``, ``0 <= y1 < y2 <= H``) and ``labels``
    (int64 ``[K]``), and returns ``{"bbox_regression", "classification"}`` losses (0-d). Eval
    mode returns one dict per image: ``boxes`` float ``[D, 4]`` in the original image's pixels,
    ``scores`` ``[D]``, ``labels`` int64 ``[D]``, by decreasing score.

    Args:
        backbone: returns a tensor or an ordered dict of feature maps; ``out_channels`` (if
            present) lists their channels, else they are measured on a dummy image.
        anchor_generator: a :class:`DefaultBoxGenerator` with one entry per feature map.
        size: ``(width, height)`` the images are resized to.
        num_classes: classes including the background (class 0).
        image_mean, image_std: normalisation (default ImageNet's).
        head: default :class:`SSDHead`.
        score_thresh: class scores (softmax) must exceed this to be kept.
        nms_thresh: IoU above which NMS drops the lower-scored box of a class.
        detections_per_img: detections kept per image after NMS.
        iou_thresh: IoU for an anchor to match a ground-truth box in training.
        topk_candidates: best boxes per class kept before NMS.
        positive_fraction: sets the hard-negative ratio ``(1 - f) / f`` (3 negatives per positive).
        **kwargs: passed to :class:`GeneralizedRCNNTransform`.

    Raises:
        ValueError: backbone maps and anchor generator disagree in number; a bad image (see
            :class:`GeneralizedRCNNTransform`).
        AssertionError: training without targets, target boxes not ``[K, 4]`` tensors, or a box
            with non-positive width or height (torchvision asserts these).
    """

    def __init__(self, backbone: nn.Module, anchor_generator: DefaultBoxGenerator, size: Tuple[int, int],
                 num_classes: int, image_mean: Optional[List[float]] = None,
                 image_std: Optional[List[float]] = None, head: Optional[nn.Module] = None,
                 score_thresh: float = 0.01, nms_thresh: float = 0.45, detections_per_img: int = 200,
                 iou_thresh: float = 0.5, topk_candidates: int = 400, positive_fraction: float = 0.25,
                 **kwargs) -> None:
        super().__init__()
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            out_channels = getattr(backbone, "out_channels", None) or det_utils.retrieve_out_channels(backbone, size)
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ValueError(f"The length of the output channels from the backbone ({len(out_channels)}) do not "
                                 "match the length of the anchor generator aspect ratios "
                                 f"({len(anchor_generator.aspect_ratios)})")
            head = SSDHead(out_channels, anchor_generator.num_anchors_per_location(), num_classes)
        self.head = head
        self.proposal_matcher = det_utils.SSDMatcher(iou_thresh)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(min(size), max(size), image_mean, image_std, size_divisible=1,
                                                  fixed_size=size, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    # ---- training ---------------------------------------------------------------------

    def compute_loss(self, targets: List[Dict[str, ember.Tensor]], head_outputs: Dict[str, ember.Tensor],
                     anchors: List[ember.Tensor], matched_idxs: List[ember.Tensor]) -> Dict[str, ember.Tensor]:
        """Smooth L1 over the matched anchors' codes, plus cross-entropy over the matched anchors
        and the ``neg_to_pos_ratio`` times as many unmatched anchors with the highest loss, both
        divided by the number of matches (at least 1)."""
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]
        num_foreground = 0
        bbox_loss, cls_targets = [], []
        for target, reg, logits, anchors_i, matched in zip(targets, bbox_regression, cls_logits, anchors,
                                                           matched_idxs):
            fg = ember.where(matched >= 0)[0]
            fg_matched = matched[fg]
            num_foreground += fg_matched.numel()
            target_reg = self.box_coder.encode_single(target["boxes"][fg_matched], anchors_i[fg])
            bbox_loss.append(F.smooth_l1_loss(reg[fg], target_reg, reduction="sum"))
            labels = target["labels"]
            gt_classes = ember.zeros((logits.size(0),), dtype=labels.dtype, device=labels.device)
            gt_classes[fg] = labels[fg_matched]
            cls_targets.append(gt_classes)
        bbox_loss = ember.stack(bbox_loss)
        cls_targets = ember.stack(cls_targets)

        num_classes = cls_logits.size(-1)
        cls_loss = F.cross_entropy(cls_logits.view(-1, num_classes), cls_targets.view(-1),
                                   reduction="none").view(cls_targets.shape)
        # hard negative mining: per image, the unmatched anchors ranked by loss; the top
        # neg_to_pos_ratio * positives of them are kept (matched ones ranked last via -inf)
        foreground = cls_targets > 0
        num_negative = self.neg_to_pos_ratio * foreground.sum(1, keepdim=True)
        with ember.no_grad():
            negative_loss = ember.where(foreground, float("-inf"), cls_loss.detach())
            order = negative_loss.sort(1, descending=True)[1]
            background = order.sort(1)[1] < num_negative
        n = max(1, num_foreground)
        zero = ember.zeros((), dtype=cls_loss.dtype, device=cls_loss.device)
        classification = ember.where(foreground, cls_loss, zero).sum() + ember.where(background, cls_loss, zero).sum()
        return {"bbox_regression": bbox_loss.sum() / n, "classification": classification / n}

    # ---- inference --------------------------------------------------------------------

    def postprocess_detections(self, head_outputs: Dict[str, ember.Tensor], image_anchors: List[ember.Tensor],
                               image_shapes: List[Tuple[int, int]]) -> List[Dict[str, ember.Tensor]]:
        """Per image: decode and clip the boxes; per foreground class keep the
        ``topk_candidates`` best scores above ``score_thresh``; class-wise NMS; the first
        ``detections_per_img`` by decreasing score."""
        pred_scores = F.softmax(head_outputs["cls_logits"], dim=-1)
        num_classes = pred_scores.size(-1)
        device = pred_scores.device
        detections = []
        for codes, scores, anchors, image_shape in zip(head_outputs["bbox_regression"], pred_scores, image_anchors,
                                                       image_shapes):
            boxes = box_ops.clip_boxes_to_image(self.box_coder.decode_single(codes, anchors), image_shape)
            # all classes at once: each column sorted, its first k rows are the class's top k;
            # the threshold then keeps a prefix of each column (class-major order, as a loop
            # over the classes would give)
            k = min(self.topk_candidates, scores.size(0))
            top_scores, top_idx = scores[:, 1:].sort(0, descending=True)
            top_scores, top_idx = top_scores[:k].t().reshape(-1), top_idx[:k].t().reshape(-1)
            labels = ember.arange(1, num_classes, device=device)[:, None].expand(num_classes - 1, k).reshape(-1)
            keep = ember.where(top_scores > self.score_thresh)[0]
            image_boxes, image_scores, image_labels = boxes[top_idx[keep]], top_scores[keep], labels[keep]
            keep = box_ops.batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
            keep = keep[: self.detections_per_img]
            detections.append({"boxes": image_boxes[keep], "scores": image_scores[keep],
                               "labels": image_labels[keep]})
        return detections

    def _check_targets(self, targets) -> None:
        if targets is None:
            raise AssertionError("targets should not be none when in training mode")
        for target in targets:
            boxes = target["boxes"]
            if not isinstance(boxes, ember.Tensor):
                raise AssertionError(f"Expected target boxes to be of type Tensor, got {type(boxes).__name__}.")
            if boxes.dim() != 2 or boxes.shape[-1] != 4:
                raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4], got {tuple(boxes.shape)}.")

    def forward(self, images: List[ember.Tensor], targets: Optional[List[Dict[str, ember.Tensor]]] = None):
        if self.training:
            self._check_targets(targets)
        original_image_sizes = []
        for img in images:
            if img.dim() < 2:
                raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W, "
                                     f"got shape {tuple(img.shape)}")
            original_image_sizes.append((int(img.shape[-2]), int(img.shape[-1])))
        images, targets = self.transform(images, targets)
        if targets is not None:
            for target_idx, target in enumerate(targets):
                boxes = target["boxes"]
                degenerate = (boxes[:, 2:] <= boxes[:, :2]).any(dim=1)
                if degenerate.any():
                    bad = boxes[int(ember.where(degenerate)[0][0])].tolist()
                    raise AssertionError("All bounding boxes should have positive height and width. "
                                         f"Found invalid box {bad} for target at index {target_idx}.")
        features = self.backbone(images.tensors)
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        features = list(features.values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        if self.training:
            matched_idxs = []
            for anchors_i, target in zip(anchors, targets):
                if target["boxes"].numel() == 0:
                    matched_idxs.append(ember.full((anchors_i.size(0),), -1, dtype=ember.int64,
                                                   device=anchors_i.device))
                    continue
                matched_idxs.append(self.proposal_matcher(box_ops.box_iou(target["boxes"], anchors_i)))
            return self.compute_loss(targets, head_outputs, anchors, matched_idxs)
        detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
