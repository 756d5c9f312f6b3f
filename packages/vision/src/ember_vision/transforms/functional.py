"""Functional image kernels (torchvision.transforms.functional)."""

from __future__ import annotations

import numpy as np
from PIL import Image

import ember


def _is_pil(img) -> bool:
    return isinstance(img, Image.Image)


def pil_to_tensor(pic) -> ember.Tensor:
    """A PIL image as a uint8 tensor ``[C, H, W]`` (no scaling)."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.asarray(pic)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_tensor(pic) -> ember.Tensor:
    """A PIL image or a numpy array ``[H, W, C]`` / ``[H, W]`` as a float32 tensor
    ``[C, H, W]``; uint8 values are scaled from [0, 255] to [0.0, 1.0].

    Raises TypeError for other inputs and ValueError for arrays that are not 2-d or 3-d.
    """
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    elif _is_pil(pic):
        arr = np.asarray(pic)
        if pic.mode == "1":
            arr = arr.astype(np.uint8) * 255
        if arr.ndim == 2:
            arr = arr[:, :, None]
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    chw = arr.transpose(2, 0, 1)
    if chw.dtype == np.uint8:
        out = np.divide(chw, np.float32(255), dtype=np.float32)  # torch divides (not * 1/255)
        return ember.from_numpy(np.ascontiguousarray(out))
    return ember.from_numpy(np.ascontiguousarray(chw))


def normalize(tensor: ember.Tensor, mean, std, inplace: bool = False) -> ember.Tensor:
    """(tensor - mean) / std per channel of a float tensor ``[..., C, H, W]``.

    Raises TypeError for non-float tensors and ValueError for a zero in ``std``.
    """
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). "
                         f"Got tensor.size() = {tuple(tensor.shape)}")
    mean_t = ember.as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    std_t = ember.as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if bool((std_t == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if mean_t.ndim == 1:
        mean_t = mean_t.view(-1, 1, 1)
    if std_t.ndim == 1:
        std_t = std_t.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean_t).div_(std_t)
    return (tensor - mean_t) / std_t
