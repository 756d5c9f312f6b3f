"""GradBucket (torch.distributed.GradBucket): what a DDP communication hook receives, one
bucket's gradients flattened into one 1-D tensor."""

from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """The gradients a DistributedDataParallel communication hook reduces in one call
    (torch.distributed.GradBucket): ``index`` is the bucket's position, ``buffer`` the
    flattened gradients (a 1-d tensor), ``parameters`` the parameters they belong to, in
    order, and ``is_last`` whether it is the last bucket of the iteration. Made by DDP."""

    def __init__(self, index, buffer, parameters, is_last):
        self._index = index
        self._buffer = buffer
        self._parameters = parameters
        self._is_last = is_last

    def index(self) -> int:
        """The bucket's position (0 is the bucket of the last parameters, reduced first)."""
        return self._index

    def buffer(self):
        """The flattened gradients, a 1-D tensor."""
        return self._buffer

    def set_buffer(self, buffer) -> None:
        self._buffer = buffer

    def gradients(self) -> list:
        """Each parameter's gradient as a view into the buffer, shaped like the parameter."""
        out, at = [], 0
        for p in self._parameters:
            n = p.numel()
            out.append(self._buffer[at:at + n].view(p.shape))
            at += n
        return out

    def parameters(self) -> list:
        return list(self._parameters)

    def is_last(self) -> bool:
        return self._is_last
