"""Loss layers (torch.nn.modules.loss); each calls the functional of the same name, with
the constructor's settings.  Shapes and semantics are documented on the functionals in
``ember.ops.loss`` and ``ember.ops.ctc``."""

from __future__ import annotations

from ...ops import ctc as _ctc
from ...ops import loss as L
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "NLLLoss2d", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "HuberLoss", "SmoothL1Loss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
           "MultiMarginLoss", "MultiLabelMarginLoss", "MarginRankingLoss", "HingeEmbeddingLoss",
           "CosineEmbeddingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "CTCLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = L._reduction(size_average, reduce, reduction)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits ``[N, C]`` / ``[N, C, d1, ...]`` / ``[C]`` against class
    indices or class probabilities; see ``nn.functional.cross_entropy`` (torch.nn.CrossEntropyLoss).

    The target is int64 class indices ``[N]`` / ``[N, d1, ...]`` / ``[]`` or float probabilities
    of the input's shape.  ``weight``: a float ``[C]`` rescaling each class (a buffer).
    ``ignore_index``: a target index that adds no loss and no count to the mean (indices only).
    ``label_smoothing`` in [0, 1]: the target mixed with the uniform distribution by that
    amount.  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value. 'none' gives ``[N]`` / ``[N, d1, ...]``.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return L.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities ``[N, C]`` / ``[N, C, d1, ...]`` at int64 class
    indices ``[N]`` / ``[N, d1, ...]`` (torch.nn.NLLLoss): ``-weight[t] * input[n, t]``.

    ``weight``: a float ``[C]`` rescaling each class (a buffer); 'mean' divides by the summed
    weights of the targets.  ``ignore_index``: a target index that adds no loss and no weight.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value. 'none' gives the target's shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return L.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """NLLLoss under its old name for ``[N, C, H, W]`` inputs and ``[N, H, W]`` int64 targets
    (torch.nn.NLLLoss2d); ``weight``, ``ignore_index`` and ``reduction`` as NLLLoss.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """


class MSELoss(_Loss):
    """Squared error ``(input - target)**2``, reduced; input and target of any (broadcastable)
    shape, float (torch.nn.MSELoss).

    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def forward(self, input, target):
        return L.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Absolute error ``|input - target|``, reduced; input and target of any (broadcastable)
    shape (torch.nn.L1Loss).

    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value. 'none' keeps the broadcast shape.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def forward(self, input, target):
        return L.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy ``-weight * (y log x + (1 - y) log(1 - x))`` of probabilities ``x``
    in [0, 1] against targets ``y`` of the same shape, any shape (torch.nn.BCELoss); the logs
    are clamped at -100.

    ``weight``: rescales each element, broadcast to the input (a buffer).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    Forward raises ValueError for a target of another shape, RuntimeError for inputs outside
    [0, 1].
    """

    def forward(self, input, target):
        return L.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits; input and
    target of the same shape, any shape (torch.nn.BCEWithLogitsLoss).

    ``weight``: rescales each element, broadcast to the input.  ``pos_weight``: weighs the
    positive term per class, broadcast along the last dim (``[C]`` for ``[N, C]``); both are
    buffers.  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    Forward raises ValueError for a target of another shape.
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return L.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities ``input`` from ``target``; any shape;
    reduction also 'batchmean' (torch.nn.KLDivLoss).

    Pointwise ``target * (log(target) - input)``; with ``log_target`` the target is given as
    log-probabilities too (``exp(target) * (target - input)``).  ``reduction``: 'none', 'sum',
    'batchmean' (the sum over the batch size, the true KL divergence) or 'mean' (over all
    elements).
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return L.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``; any shape (torch.nn.HuberLoss).  TypeError for a
    ``delta`` that is not a number.

    For ``z = |input - target|``: ``0.5 z**2`` below ``delta``, ``delta * (z - 0.5 delta)``
    above (Huber, 1964).  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim
    tensor); forward raises ValueError for another value.
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return L.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold ``beta``; any shape (torch.nn.SmoothL1Loss).

    For ``z = |input - target|``: ``0.5 z**2 / beta`` below ``beta``, ``z - 0.5 beta`` above
    (``beta`` 0 gives the L1 loss; forward raises RuntimeError for a negative one).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return L.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y * x))`` for targets ``y`` in {1, -1}; any
    shape (torch.nn.SoftMarginLoss).

    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def forward(self, input, target):
        return L.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss, input and target ``[N, C]``, weight ``[C]``
    (torch.nn.MultiLabelSoftMarginLoss).

    The per-class binary cross entropies of the logits, times ``weight`` when given, averaged
    over C: one loss per sample.  ``reduction``: 'none' (``[N]``), 'mean' or 'sum'.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def forward(self, input, target):
        return L.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss, input ``[N, C]``, target ``[N]`` (torch.nn.MultiMarginLoss).
    ValueError for ``p`` other than 1 or 2 or a weight that is not 1-D.

    Per sample, the sum over the classes ``i != y`` of ``weight[y] * max(0, margin - x[y] +
    x[i])**p``, divided by C (``margin`` default 1, ``p`` 1 or 2).
    ``weight``: a float ``[C]`` per target class (a buffer).  ``reduction``:
    'none' (``[N]``), 'mean' or 'sum'.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D "
                             "instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return L.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss, input ``[N, C]``, target ``[N, C]`` of class indices ended by -1
    (torch.nn.MultiLabelMarginLoss).

    Per sample, the sum over target classes ``j`` and other classes ``i`` of
    ``max(0, 1 - (x[j] - x[i]))``, divided by C.  ``reduction``: 'none' (``[N]``), 'mean' or
    'sum'.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def forward(self, input, target):
        return L.multilabel_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y * (x1 - x2) + margin)`` for targets ``y`` in {1, -1}: ``x1`` should rank
    above ``x2`` where ``y`` is 1 (torch.nn.MarginRankingLoss).  Inputs ``[N]`` (or ``[]``) of
    the same shape.

    ``margin``: the required gap (default 0).
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return L.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for target 1, ``max(0, margin - x)`` for target -1 (torch.nn.HingeEmbeddingLoss);
    ``x`` is usually a distance, any shape.

    ``margin``: default 1.  ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim
    tensor); forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return L.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine similarity loss of ``[N, D]`` pairs with targets ``[N]`` in {1, -1}
    (torch.nn.CosineEmbeddingLoss): ``1 - cos(x1, x2)`` for 1, ``max(0, cos(x1, x2) - margin)``
    for -1; ``[D]`` pairs with a ``[]`` target are one sample.

    ``margin``: in [-1, 1], default 0.  ``reduction``: 'none' (``[N]``), 'mean' or 'sum'.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return L.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss with p-norm distances, inputs ``[N, D]`` (torch.nn.TripletMarginLoss).
    ValueError for ``margin <= 0``.

    ``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the pairwise distance of order ``p``
    (``||x - y + eps||_p``, ``eps`` keeping it differentiable at 0).  With ``swap``, ``d(a, n)``
    is replaced by ``d(p, n)`` when that is smaller (Balntas et al., 2016, "Learning local
    feature descriptors with triplets and shallow convolutional neural networks").
    ``reduction``: 'none' (``[N]``), 'mean' or 'sum'.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return L.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with any distance function, PairwiseDistance by default
    (torch.nn.TripletMarginWithDistanceLoss).  ValueError for ``margin <= 0``.

    ``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the ``distance_function``, a callable of two
    ``[N, D]`` tensors returning ``[N]`` non-negative distances.  ``swap``: use ``d(p, n)`` for
    the negative distance when it is smaller.  ``reduction``: 'none' (``[N]``), 'mean' or
    'sum'.  All arguments are keyword-only.
    """

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else _pairwise_distance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return L.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


def _pairwise_distance():
    """nn.PairwiseDistance() where ember has it, else a module of that name computing it."""
    try:
        from .distance import PairwiseDistance
    except ImportError:
        PairwiseDistance = _PairwiseDistance
    return PairwiseDistance()


class _PairwiseDistance(Module):
    def forward(self, x1, x2):
        return L.pairwise_distance(x1, x2)

    def _get_name(self):
        return "PairwiseDistance"


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood of ``target ~ Poisson(rate)`` (torch.nn.PoissonNLLLoss);
    input and target of any (broadcastable) shape.

    With ``log_input`` the input is ``log(rate)`` and the loss ``exp(input) - target * input``;
    without, the input is the rate and the loss ``input - target * log(input + eps)``
    (``eps`` keeps the log finite at 0).  ``full`` adds the Stirling approximation of
    ``log(target!)`` where ``target > 1``.
    ``reduction``: 'none' (the per-element losses), 'mean' or 'sum' (a 0-dim tensor);
    forward raises ValueError for another value.
    ``size_average`` and ``reduce`` are deprecated (a UserWarning when given): either one set
    makes ``reduction`` 'none' when ``reduce`` is False, else 'sum' when ``size_average`` is
    False, else 'mean'.
    """

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return L.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood with predicted variance (torch.nn.GaussianNLLLoss):
    ``0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps))`` for ``target ~
    N(input, var)``.

    input ``[N, *]`` (or ``[*]``), target of the same shape; var a float, of the same shape, of
    that shape less the last dim, or with one dim of size 1 (one variance shared along it).  ``full``
    adds the constant ``0.5 * log(2 pi)``; ``eps`` clamps the variance for stability (the clamp
    passes the gradient through).  ``reduction``: 'none' (the input's shape), 'mean' or 'sum'.  Forward
    raises ValueError for a negative var, a var of another shape or a bad reduction.
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return L.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss, log_probs ``[T, N, C]`` (torch.nn.CTCLoss;
    Graves et al., 2006, "Connectionist temporal classification: labelling unsegmented sequence
    data with recurrent neural networks").

    Forward takes log_probs ``[T, N, C]`` (or ``[T, C]``), targets ``[N, S]`` or concatenated in
    1-D, and input and target lengths ``[N]``; see ``nn.functional.ctc_loss``.  ``blank``: the
    blank class index.  ``reduction``: 'none' (``[N]``), 'mean' (each loss divided by its target
    length, then averaged) or 'sum'.  ``zero_infinity``: zero the infinite losses of impossible
    alignments and their gradients.
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return _ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                             self.zero_infinity)
