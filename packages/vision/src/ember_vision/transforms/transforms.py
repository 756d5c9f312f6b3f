"""Transform classes (torchvision.transforms): each a thin object over a functional kernel.

Images are PIL images or tensors ``[..., C, H, W]``. Random transforms draw from ember's
generator (``ember.rand``, ``ember.randint``, ``uniform_``, ``ember.randperm``), so
``ember.manual_seed`` makes them reproducible; their ``get_params`` are torchvision's.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode, _interpolation_modes_from_int

__all__ = [
    "Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize",
    "CenterCrop", "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop",
    "LinearTransformation", "ColorJitter", "RandomRotation", "RandomAffine", "Grayscale",
    "RandomGrayscale", "RandomPerspective", "RandomErasing", "GaussianBlur", "InterpolationMode",
    "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast",
    "RandomEqualize", "ElasticTransform",
]


def _uniform(lo: float, hi: float) -> float:
    return float(ember.empty(1).uniform_(lo, hi).item())


def _randint(lo: int, hi: int) -> int:
    return int(ember.randint(lo, hi, (1,)).item())


def _coin(p: float) -> bool:
    return float(ember.rand(1).item()) < p


def _to_mode(interpolation):
    return _interpolation_modes_from_int(interpolation) if isinstance(interpolation, int) else interpolation


def _setup_size(size, error_msg):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name, req_sizes):
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join(str(s) for s in req_sizes)
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name, req_sizes=(2,)):
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _tensor_fill(fill, img):
    """A tensor image's fill as one float per channel (PIL images take the fill as given)."""
    if not isinstance(img, ember.Tensor):
        return fill
    if isinstance(fill, (int, float)):
        return [float(fill)] * F.get_dimensions(img)[0]
    return [float(f) for f in fill]


_SIZE_MSG = "Please provide only two dimensions (h, w) for size."


class Compose:
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class ToTensor:
    """PIL image or ndarray ``[H, W, C]`` -> tensor ``[C, H, W]``; uint8 becomes float32 in [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class PILToTensor:
    """PIL image -> tensor ``[C, H, W]`` of the image's dtype, unscaled."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ToPILImage:
    """Tensor ``[C, H, W]`` or ndarray ``[H, W, C]`` -> PIL image of ``mode`` (inferred if None)."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + (f"mode={self.mode}" if self.mode is not None else "") + ")"


class ConvertImageDtype(nn.Module):
    """Convert a tensor image to ``dtype`` with value rescaling (see ``F.convert_image_dtype``)."""

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normalize(nn.Module):
    """Per-channel ``(x - mean) / std`` on float tensors ``[..., C, H, W]``
    (torchvision.transforms.Normalize); ``mean`` and ``std`` hold one value per channel, ``inplace``
    writes into the input. Errors are ``F.normalize``'s.
    """

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class Resize(nn.Module):
    """Resize to ``size`` (see ``F.resize``): [h, w], or an int for the smaller edge with the longer
    edge capped at ``max_size``; ``interpolation`` an ``InterpolationMode`` or pillow int;
    ``antialias`` for bilinear/bicubic tensors. Raises TypeError/ValueError for a bad size.
    """

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size = size, max_size
        self.interpolation = _to_mode(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(nn.Module):
    """Crop the center ``size`` ([h, w] or int) of the image, zero-padding a smaller image
    (torchvision.transforms.CenterCrop; see ``F.center_crop``). Raises ValueError for a size of
    more than two values.
    """
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, _SIZE_MSG)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


class Pad(nn.Module):
    """Pad by ``padding`` pixels (int, [all], [left/right, top/bottom] or [l, t, r, b]) with
    ``padding_mode`` constant (value ``fill``, a number or one per channel), edge, reflect or
    symmetric. Raises TypeError/ValueError for malformed arguments.
    """

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError(
                f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple"
            )
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class Lambda:
    """Apply the user function ``lambd`` to the input. Raises TypeError if it is not callable."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RandomTransforms:
    """Base of transforms that apply a random selection of ``transforms``."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}({body}\n)"


class RandomApply(nn.Module):
    """Apply all ``transforms`` with probability ``p``, else none."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, img):
        if self.p < float(ember.rand(1).item()):
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{type(self).__name__}(\n    p={self.p}{body}\n)"


class RandomOrder(RandomTransforms):
    """Apply ``transforms`` in a random order (an ``ember.randperm``)."""

    def __call__(self, img):
        for i in ember.randperm(len(self.transforms)).tolist():
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply one of ``transforms``, picked with weights ``p`` (uniform if None)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        weights = np.ones(len(self.transforms)) if self.p is None else np.asarray(self.p, dtype=np.float64)
        cum = np.cumsum(weights)
        k = int(np.searchsorted(cum, float(ember.rand(1, dtype=ember.float64).item()) * cum[-1], side="right"))
        return self.transforms[min(k, len(self.transforms) - 1)](*args)

    def __repr__(self) -> str:
        return f"{super().__repr__()}(p={self.p})"


class RandomCrop(nn.Module):
    """Crop a random ``size`` box ([h, w] or int), after optional ``padding`` (as ``F.pad``) and,
    with ``pad_if_needed``, padding of an image smaller than ``size``; the padding uses
    ``padding_mode`` and ``fill``. Raises ValueError if the crop does not fit.
    """

    @staticmethod
    def get_params(img, output_size):
        """Random (top, left, h, w) of an ``output_size`` crop. ValueError if it does not fit."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, _SIZE_MSG))
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, h, w = F.get_dimensions(img)
        if self.pad_if_needed and w < self.size[1]:
            img = F.pad(img, [self.size[1] - w, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and h < self.size[0]:
            img = F.pad(img, [0, self.size[0] - h], self.fill, self.padding_mode)
        i, j, th, tw = self.get_params(img, self.size)
        return F.crop(img, i, j, th, tw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class _RandomP(nn.Module):
    """Apply ``_apply`` with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return self._apply_to(img) if _coin(self.p) else img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomP):
    """Mirror the image left-right with probability ``p`` (torchvision.transforms.RandomHorizontalFlip)."""
    def _apply_to(self, img):
        return F.hflip(img)


class RandomVerticalFlip(_RandomP):
    """Mirror the image top-bottom with probability ``p`` (torchvision.transforms.RandomVerticalFlip)."""
    def _apply_to(self, img):
        return F.vflip(img)


class RandomInvert(_RandomP):
    """With probability ``p``, ``F.invert`` the image (torchvision.transforms.RandomInvert)."""
    def _apply_to(self, img):
        return F.invert(img)


class RandomAutocontrast(_RandomP):
    """With probability ``p``, ``F.autocontrast`` the image (torchvision.transforms.RandomAutocontrast)."""
    def _apply_to(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomP):
    """With probability ``p``, ``F.equalize`` the image (uint8 tensors or PIL;
    torchvision.transforms.RandomEqualize).
    """
    def _apply_to(self, img):
        return F.equalize(img)


class RandomPosterize(_RandomP):
    """With probability ``p``, keep the top ``bits`` bits of each uint8 value (``F.posterize``;
    torchvision.transforms.RandomPosterize).
    """
    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _apply_to(self, img):
        return F.posterize(img, self.bits)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(bits={self.bits},p={self.p})"


class RandomSolarize(_RandomP):
    """With probability ``p``, invert the values >= ``threshold`` (``F.solarize``;
    torchvision.transforms.RandomSolarize).
    """
    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _apply_to(self, img):
        return F.solarize(img, self.threshold)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threshold={self.threshold},p={self.p})"


class RandomAdjustSharpness(_RandomP):
    """With probability ``p``, ``F.adjust_sharpness`` by ``sharpness_factor`` (0 blurs, 1 keeps,
    2 sharpens; torchvision.transforms.RandomAdjustSharpness).
    """
    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _apply_to(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(sharpness_factor={self.sharpness_factor},p={self.p})"


class RandomPerspective(nn.Module):
    """With probability ``p``, a random perspective warp moving each corner by up to
    ``distortion_scale`` of half the image size; ``interpolation`` for sampling, ``fill`` (a number
    or one per channel) for the area outside. Raises TypeError for a bad fill.
    """

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.p, self.distortion_scale = p, distortion_scale
        self.interpolation = _to_mode(interpolation)
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        _, h, w = F.get_dimensions(img)
        if _coin(self.p):
            start, end = self.get_params(w, h, self.distortion_scale)
            return F.perspective(img, start, end, self.interpolation, fill)
        return img

    @staticmethod
    def get_params(width, height, distortion_scale):
        """(startpoints, endpoints): the 4 corners and their random displaced positions."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))
        topleft = [_randint(0, dx + 1), _randint(0, dy + 1)]
        topright = [_randint(width - dx - 1, width), _randint(0, dy + 1)]
        botright = [_randint(width - dx - 1, width), _randint(height - dy - 1, height)]
        botleft = [_randint(0, dx + 1), _randint(height - dy - 1, height)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [topleft, topright, botright, botleft]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomResizedCrop(nn.Module):
    """Crop a random area fraction in ``scale`` with aspect ratio (w / h) in ``ratio``, resize to
    ``size`` with ``interpolation`` and ``antialias`` (Szegedy et al., 2014, "Going Deeper with
    Convolutions", arXiv:1409.4842). Raises TypeError if scale or ratio is not a sequence.
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size, _SIZE_MSG)
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        self.interpolation = _to_mode(interpolation)
        self.antialias, self.scale, self.ratio = antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        """(top, left, h, w): up to 10 random tries (log-uniform ratio), then a center crop
        clamped to ``ratio``."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            w = int(round(math.sqrt(target_area * aspect)))
            h = int(round(math.sqrt(target_area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class FiveCrop(nn.Module):
    """The four corner crops and the center crop of ``size`` ([h, w] or int), as a tuple of 5
    images (torchvision.transforms.FiveCrop; see ``F.five_crop``).
    """
    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, _SIZE_MSG)

    def forward(self, img):
        return F.five_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


class TenCrop(nn.Module):
    """``FiveCrop`` of the image and of its horizontal flip (vertical if ``vertical_flip``): a
    tuple of 10 images of ``size`` (torchvision.transforms.TenCrop).
    """
    def __init__(self, size, vertical_flip=False):
        super().__init__()
        self.size = _setup_size(size, _SIZE_MSG)
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, vertical_flip={self.vertical_flip})"


class LinearTransformation(nn.Module):
    """Flatten ``[..., C, H, W]``, subtract ``mean_vector`` ``[D]``, multiply by
    ``transformation_matrix`` ``[D, D]`` (D = C*H*W), reshape back (e.g. ZCA whitening)."""

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        m = transformation_matrix
        if m.shape[0] != m.shape[1]:
            raise ValueError(f"transformation_matrix should be square. Got {tuple(m.shape)} rectangular matrix.")
        if mean_vector.shape[0] != m.shape[0]:
            raise ValueError(
                f"mean_vector should have the same length {mean_vector.shape[0]}"
                f" as any one of the dimensions of the transformation_matrix [{tuple(m.shape)}]"
            )
        if m.dtype != mean_vector.dtype:
            raise ValueError(f"Input tensors should have the same dtype. Got {m.dtype} and {mean_vector.dtype}")
        self.transformation_matrix, self.mean_vector = m, mean_vector

    def forward(self, tensor):
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(
                "Input tensor and transformation matrix have incompatible shape."
                f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}"
            )
        flat = tensor.reshape(-1, n) - self.mean_vector
        return ember.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(transformation_matrix={self.transformation_matrix.tolist()}, "
                f"mean_vector={self.mean_vector.tolist()})")


class ColorJitter(nn.Module):
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    Each of ``brightness``, ``contrast``, ``saturation`` is a max deviation ``v`` (factor drawn
    from [max(0, 1 - v), 1 + v]) or a ``(min, max)`` range; ``hue`` a deviation v <= 0.5 (shift
    drawn from [-v, v] turns) or a range within [-0.5, 0.5]. Raises TypeError/ValueError for other
    values.
    """

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """(order, b, c, s, h): a permutation of 0..3 and one factor per range (None if off)."""
        fn_idx = ember.randperm(4)
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def forward(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        steps = {0: (F.adjust_brightness, b), 1: (F.adjust_contrast, c), 2: (F.adjust_saturation, s),
                 3: (F.adjust_hue, h)}
        for k in order.tolist():
            fn, factor = steps[k]
            if factor is not None:
                img = fn(img, factor)
        return img

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomRotation(nn.Module):
    """Rotate by an angle drawn uniformly from ``degrees`` ((min, max) or [-d, d]),
    counter-clockwise about ``center`` ([x, y] pixels, default the image center); ``expand`` grows
    the output to hold the whole image; ``interpolation`` for sampling, ``fill`` for the area
    outside. Raises TypeError/ValueError for malformed arguments.
    """

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.interpolation = _to_mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center, self.expand = center, expand
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(degrees):
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self) -> str:
        s = (f"{type(self).__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
             f"expand={self.expand}")
        if self.center is not None:
            s += f", center={self.center}"
        if self.fill is not None:
            s += f", fill={self.fill}"
        return s + ")"


class RandomAffine(nn.Module):
    """Random affine warp: angle from ``degrees``, translation up to ``translate`` fractions
    of width/height, scale from ``scale``, shear from ``shear`` (2 values: x only; 4: x and y),
    about ``center`` ([x, y] pixels, default the image center); ``interpolation`` for sampling,
    ``fill`` for the area outside. Raises TypeError/ValueError for malformed arguments.
    """

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.interpolation = _to_mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not (0.0 <= t <= 1.0):
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)); ``img_size`` is [width, height]."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translations = (0, 0)
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        _, h, w = F.get_dimensions(img)
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear, [w, h])
        return F.affine(img, *params, interpolation=self.interpolation, fill=fill, center=self.center)

    def __repr__(self) -> str:
        s = f"{type(self).__name__}(degrees={self.degrees}"
        s += f", translate={self.translate}" if self.translate is not None else ""
        s += f", scale={self.scale}" if self.scale is not None else ""
        s += f", shear={self.shear}" if self.shear is not None else ""
        s += f", interpolation={self.interpolation.value}" if self.interpolation != InterpolationMode.NEAREST else ""
        s += f", fill={self.fill}" if self.fill != 0 else ""
        s += f", center={self.center}" if self.center is not None else ""
        return s + ")"


class Grayscale(nn.Module):
    """RGB to grayscale with ``num_output_channels`` 1 or 3 (``F.rgb_to_grayscale``;
    torchvision.transforms.Grayscale).
    """
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(nn.Module):
    """With probability ``p``, grayscale keeping the channel count."""

    def __init__(self, p=0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        c, _, _ = F.get_dimensions(img)
        if _coin(self.p):
            return F.rgb_to_grayscale(img, num_output_channels=c)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomErasing(nn.Module):
    """With probability ``p``, erase a random box of a tensor image ``[..., C, H, W]`` (Zhong et
    al., 2017, "Random Erasing Data Augmentation", arXiv:1708.04896): area fraction in ``scale``,
    aspect ratio in ``ratio``; ``value`` a number, per-channel sequence, or ``'random'`` (standard
    normal noise); ``inplace`` writes into the input. Raises TypeError/ValueError for malformed
    arguments.
    """

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(i, j, h, w, v); after 10 failed tries, (0, 0, H, W, img) (nothing erased)."""
        c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect = math.exp(_uniform(log_lo, log_hi))
            h = int(round(math.sqrt(erase_area * aspect)))
            w = int(round(math.sqrt(erase_area / aspect)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = ember.empty([c, h, w], dtype=ember.float32).normal_()
            else:
                v = ember.tensor(value)[:, None, None]
            return _randint(0, img_h - h + 1), _randint(0, img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _coin(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in self.value]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError(
                    "If value is a sequence, it should have either a single value or "
                    f"{img.shape[-3]} (number of input channels)"
                )
            i, j, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return F.erase(img, i, j, h, w, v, self.inplace)
        return img

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")


class GaussianBlur(nn.Module):
    """Gaussian blur with ``kernel_size`` and a sigma drawn uniformly from ``sigma`` (min, max)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


class ElasticTransform(nn.Module):
    """Random elastic displacement: uniform noise in [-1, 1] blurred by ``sigma``, scaled by
    ``alpha`` (Simard et al., 2003, "Best Practices for Convolutional Neural Networks");
    ``interpolation`` for sampling, ``fill`` for the area outside. Raises TypeError/ValueError for
    malformed alpha, sigma or fill.
    """

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self.alpha = self._pair_of_floats(alpha, "alpha")
        self.sigma = self._pair_of_floats(sigma, "sigma")
        self.interpolation = _to_mode(interpolation)
        if isinstance(fill, (int, float)):
            fill = [float(fill)]
        elif isinstance(fill, (list, tuple)):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(f"fill should be int or float or a list or tuple of them. Got {type(fill)}")
        self.fill = fill

    @staticmethod
    def _pair_of_floats(value, name):
        if not isinstance(value, (float, Sequence)):
            raise TypeError(f"{name} should be float or a sequence of floats. Got {type(value)}")
        if isinstance(value, Sequence) and len(value) != 2:
            raise ValueError(f"If {name} is a sequence its length should be 2. Got {len(value)}")
        if isinstance(value, Sequence):
            for v in value:
                if not isinstance(v, float):
                    raise TypeError(f"{name} should be a sequence of floats. Got {type(v)}")
            return list(value)
        return [float(value), float(value)]

    @staticmethod
    def get_params(alpha, sigma, size):
        """Displacement ``[1, H, W, 2]`` for ``size = [H, W]``, in grid units."""
        def component(a, s, extent):
            d = ember.rand([1, 1] + list(size)) * 2 - 1
            if s > 0.0:
                k = int(8 * s + 1)
                k += 1 - k % 2  # odd kernel
                d = F.gaussian_blur(d, [k, k], list(sigma))
            return d * a / extent

        dx = component(alpha[0], sigma[0], size[1])
        dy = component(alpha[1], sigma[1], size[0])
        return ember.cat([dx, dy], 1).permute(0, 2, 3, 1)

    def forward(self, tensor):
        _, h, w = F.get_dimensions(tensor)
        displacement = self.get_params(self.alpha, self.sigma, [h, w])
        return F.elastic_transform(tensor, displacement, self.interpolation, self.fill)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(alpha={self.alpha}, sigma={self.sigma}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
