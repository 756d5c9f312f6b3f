"""Embedding tables: Embedding and EmbeddingBag (torch.nn.modules.sparse)."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.creation import empty
from ...ops.embedding import embedding as _embedding
from ...ops.embedding import embedding_bag as _embedding_bag
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _module_padding_idx(padding_idx, num_embeddings):
    if padding_idx is None:
        return None
    if padding_idx >= num_embeddings or padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


class _EmbeddingTable(Module):
    """The ``weight`` ``[num_embeddings, embedding_dim]`` table, drawn from N(0, 1) with the
    ``padding_idx`` row zeroed, or ``_weight`` when given."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                 _weight, _freeze, device, dtype):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _module_padding_idx(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), **_factory_kwargs(device, dtype)),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def _repr_options(self) -> str:
        s = ""
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s


def _check_pretrained(embeddings):
    if embeddings.dim() != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")


class Embedding(_EmbeddingTable):
    """Look-up table: int64/int32 indices ``[*]`` to rows ``[*, embedding_dim]`` of ``weight``
    (torch.nn.Embedding).  ``padding_idx``'s row starts at zero and gets no gradient;
    ``max_norm`` renormalises looked-up rows in place; ``scale_grad_by_freq`` divides each
    row's gradient by its count in the batch.  Gradients are dense: ``sparse=True`` raises
    NotImplementedError when a gradient of the weight would be recorded.

    ``num_embeddings``: the number of rows; ``embedding_dim``: their size.  ``padding_idx``
    may be negative (counted from the end; AssertionError outside the table).  ``max_norm``:
    rows looked up with a larger ``norm_type``-norm (default 2) are rescaled to it.
    ``device``, ``dtype``: of the weight, drawn from N(0, 1).
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None,
                 _freeze: bool = False, device=None, dtype=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                         sparse, _weight, _freeze, device, dtype)

    def forward(self, input):
        return _embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                          self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += self._repr_options()
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
        """An Embedding whose weight is ``embeddings`` ``[num_embeddings, embedding_dim]``
        (shared, not copied), trainable unless ``freeze``."""
        _check_pretrained(embeddings)
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)


class EmbeddingBag(_EmbeddingTable):
    """Sums, means or maxima of bags of embeddings without materialising each row
    (torch.nn.EmbeddingBag); see ``ember.nn.functional.embedding_bag`` for the input
    layouts (``[B, L]``, or ``[L]`` with ``offsets``) and ``per_sample_weights``.  Returns
    ``[B, embedding_dim]``.

    ``num_embeddings``, ``embedding_dim``: the table's shape, drawn from N(0, 1).
    ``max_norm``, ``norm_type``: renormalise looked-up rows whose ``norm_type``-norm exceeds
    ``max_norm``.  ``scale_grad_by_freq``: divide each row's gradient by its count in the
    batch (ValueError in forward with mode 'max').  ``mode``: 'sum', 'mean' or 'max' over each bag.
    ``sparse``: sparse gradients, which ember does not have (NotImplementedError once a
    weight gradient would be recorded).  ``include_last_offset``: ``offsets`` has B+1 entries,
    the last the end of the last bag.  ``padding_idx``: a row that is left out of every bag
    and gets no gradient (negative counts from the end).  ``device``, ``dtype``: of the
    weight.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
                         sparse, _weight, False, device, dtype)
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return _embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                              self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                              self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}" + self._repr_options() + f", mode='{self.mode}'"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """An EmbeddingBag whose weight is ``embeddings`` ``[num_embeddings, embedding_dim]``
        (shared, not copied), trainable unless ``freeze``."""
        _check_pretrained(embeddings)
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
