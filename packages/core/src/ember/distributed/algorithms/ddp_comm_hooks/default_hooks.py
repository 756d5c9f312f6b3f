"""The built-in DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks.default_hooks).
Each takes ``(process_group, bucket)`` (``state`` is the group, or None for the default one)
and returns an ember.futures.Future of the bucket's averaged, flattened gradients.

Source: https://pytorch.org/docs/stable/ddp_comm_hooks.html
"""

from __future__ import annotations

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _average(group, tensor):
    from ... import _group
    from ..._collectives import all_reduce
    pg = _group._resolve(group)
    tensor.div_(pg.size())
    return all_reduce(tensor, group=pg, async_op=True).get_future()


def allreduce_hook(process_group, bucket):
    """Average the bucket across the group, in the gradients' dtype (DDP's own behaviour)."""
    return _average(process_group, bucket.buffer()).then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype)

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return _average(process_group, compressed).then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Cast the bucket to float16, average it across the group, cast the result back: half
    the bytes on the wire, float16's precision in the gradients."""
    from .... import float16
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """As fp16_compress_hook, with bfloat16 (float32's range, 8 bits of mantissa)."""
    from .... import bfloat16
    return _compress_hook(bfloat16, process_group, bucket)
