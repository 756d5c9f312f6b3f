"""Learned and random augmentation policies (torchvision.transforms.autoaugment).

AutoAugment: Cubuk et al., 2019, "AutoAugment: Learning Augmentation Strategies from Data".
RandAugment: Cubuk et al., 2020, "RandAugment: Practical automated data augmentation ...".
TrivialAugmentWide: Müller & Hutter, 2021, "TrivialAugment: Tuning-free Yet State-of-the-Art ...".
AugMix: Hendrycks et al., 2020, "AugMix: A Simple Data Processing Method to Improve Robustness ...".
Images are PIL images or uint8 tensors ``[..., C, H, W]`` (the ops posterize and equalize
need uint8). Randomness comes from ember's generator.
"""

from __future__ import annotations

import math
from enum import Enum

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _apply_op(img, op_name: str, magnitude: float, interpolation, fill):
    """One augmentation op at ``magnitude`` (shears as slopes, translations in pixels)."""
    if op_name in ("ShearX", "ShearY"):
        angle = math.degrees(math.atan(magnitude))
        shear = [angle, 0.0] if op_name == "ShearX" else [0.0, angle]
        # shear about the top-left corner, as the reference implementations do
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=shear, interpolation=interpolation,
                        fill=fill, center=[0, 0])
    if op_name in ("TranslateX", "TranslateY"):
        translate = [int(magnitude), 0] if op_name == "TranslateX" else [0, int(magnitude)]
        return F.affine(img, angle=0.0, translate=translate, scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _lin(lo: float, hi: float, n: int):
    return ember.linspace(lo, hi, n)


def _posterize_bins(top: int, n: int, span: int):
    return top - (ember.arange(n) / ((n - 1) / span)).round().to(ember.int32)


def _scalar():
    return ember.tensor(0.0)


def _tensor_fill(fill, img):
    if not isinstance(img, ember.Tensor) or fill is None:
        return fill
    if isinstance(fill, (int, float)):
        return [float(fill)] * F.get_dimensions(img)[0]
    return [float(f) for f in fill]


def _magnitude(magnitudes, index) -> float:
    return float(magnitudes[index].item()) if magnitudes.ndim > 0 else 0.0


def _coin() -> bool:
    return bool(ember.randint(2, (1,)).item())


class AutoAugmentPolicy(Enum):
    """The policies learned on ImageNet, CIFAR10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# Each sub-policy: two (op, probability, magnitude bin) steps; from the AutoAugment paper.
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


def _rand_augment_space(num_bins: int, image_size, identity: bool):
    """Op -> (magnitudes per bin, signed) shared by AutoAugment and RandAugment."""
    h, w = image_size
    space = {"Identity": (_scalar(), False)} if identity else {}
    space.update({
        "ShearX": (_lin(0.0, 0.3, num_bins), True),
        "ShearY": (_lin(0.0, 0.3, num_bins), True),
        "TranslateX": (_lin(0.0, 150.0 / 331.0 * w, num_bins), True),
        "TranslateY": (_lin(0.0, 150.0 / 331.0 * h, num_bins), True),
        "Rotate": (_lin(0.0, 30.0, num_bins), True),
        "Brightness": (_lin(0.0, 0.9, num_bins), True),
        "Color": (_lin(0.0, 0.9, num_bins), True),
        "Contrast": (_lin(0.0, 0.9, num_bins), True),
        "Sharpness": (_lin(0.0, 0.9, num_bins), True),
        "Posterize": (_posterize_bins(8, num_bins, 4), False),
        "Solarize": (_lin(255.0, 0.0, num_bins), False),
        "AutoContrast": (_scalar(), False),
        "Equalize": (_scalar(), False),
    })
    return space


class AutoAugment(nn.Module):
    """Apply one random sub-policy of ``policy`` (two ops, each with its probability and
    magnitude; Cubuk et al., 2019, arXiv:1805.09501; torchvision.transforms.AutoAugment).
    ``interpolation`` samples the geometric ops, ``fill`` (a number or one per channel) fills the
    area they uncover. Raises ValueError for an unknown policy.
    """

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy, self.interpolation, self.fill = policy, interpolation, fill
        self.policies = _POLICIES[policy]

    def _augmentation_space(self, num_bins, image_size):
        space = _rand_augment_space(num_bins, image_size, identity=False)
        space["Invert"] = (_scalar(), False)
        return space

    @staticmethod
    def get_params(transform_num: int):
        """(sub-policy index, two probabilities, two signs in {0, 1})."""
        policy_id = int(ember.randint(transform_num, (1,)).item())
        return policy_id, ember.rand((2,)), ember.randint(2, (2,))

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        _, h, w = F.get_dimensions(img)
        policy_id, probs, signs = self.get_params(len(self.policies))
        space = self._augmentation_space(10, (h, w))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[policy_id]):
            if float(probs[i].item()) <= p:
                magnitudes, signed = space[op_name]
                magnitude = float(magnitudes[magnitude_id].item()) if magnitude_id is not None else 0.0
                if signed and int(signs[i].item()) == 0:
                    magnitude = -magnitude
                img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(nn.Module):
    """Apply ``num_ops`` ops drawn uniformly, each at bin ``magnitude`` of ``num_magnitude_bins``
    (Cubuk et al., 2020, arXiv:1909.13719; torchvision.transforms.RandAugment). ``interpolation``
    samples the geometric ops, ``fill`` (a number or one per channel) fills the area they uncover.
    """

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        return _rand_augment_space(num_bins, image_size, identity=True)

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        _, h, w = F.get_dimensions(img)
        space = self._augmentation_space(self.num_magnitude_bins, (h, w))
        names = list(space)
        for _ in range(self.num_ops):
            op_name = names[int(ember.randint(len(names), (1,)).item())]
            magnitudes, signed = space[op_name]
            magnitude = _magnitude(magnitudes, self.magnitude)
            if signed and _coin():
                magnitude = -magnitude
            img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


class TrivialAugmentWide(nn.Module):
    """Apply one op drawn uniformly at a magnitude bin drawn uniformly from
    ``num_magnitude_bins`` (the wide ranges; Müller & Hutter, 2021, arXiv:2103.10158;
    torchvision.transforms.TrivialAugmentWide). ``interpolation`` samples the geometric ops,
    ``fill`` (a number or one per channel) fills the area they uncover.
    """

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, interpolation, fill

    def _augmentation_space(self, num_bins):
        return {
            "Identity": (_scalar(), False),
            "ShearX": (_lin(0.0, 0.99, num_bins), True),
            "ShearY": (_lin(0.0, 0.99, num_bins), True),
            "TranslateX": (_lin(0.0, 32.0, num_bins), True),
            "TranslateY": (_lin(0.0, 32.0, num_bins), True),
            "Rotate": (_lin(0.0, 135.0, num_bins), True),
            "Brightness": (_lin(0.0, 0.99, num_bins), True),
            "Color": (_lin(0.0, 0.99, num_bins), True),
            "Contrast": (_lin(0.0, 0.99, num_bins), True),
            "Sharpness": (_lin(0.0, 0.99, num_bins), True),
            "Posterize": (_posterize_bins(8, num_bins, 6), False),
            "Solarize": (_lin(255.0, 0.0, num_bins), False),
            "AutoContrast": (_scalar(), False),
            "Equalize": (_scalar(), False),
        }

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        space = self._augmentation_space(self.num_magnitude_bins)
        names = list(space)
        op_name = names[int(ember.randint(len(names), (1,)).item())]
        magnitudes, signed = space[op_name]
        magnitude = (_magnitude(magnitudes, int(ember.randint(len(magnitudes), (1,)).item()))
                     if magnitudes.ndim > 0 else 0.0)
        if signed and _coin():
            magnitude = -magnitude
        return _apply_op(img, op_name, magnitude, self.interpolation, fill)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class AugMix(nn.Module):
    """Mix ``mixture_width`` random op chains (Dirichlet(``alpha``) weights) with the image
    (Beta(``alpha``, ``alpha``) weight) (Hendrycks et al., 2020, arXiv:1912.02781;
    torchvision.transforms.AugMix).

    Each chain has ``chain_depth`` ops (drawn from 1..3 when it is -1); each op's magnitude bin is
    drawn below ``severity`` (1..10) of 10 bins; ``all_ops`` adds brightness, color, contrast and
    sharpness to the op set. ``interpolation`` samples the geometric ops, ``fill`` fills the area
    they uncover. Raises ValueError for severity outside [1, 10].
    """

    _PARAMETER_MAX = 10

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops, self.interpolation, self.fill = alpha, all_ops, interpolation, fill

    def _augmentation_space(self, num_bins, image_size):
        h, w = image_size
        space = {
            "ShearX": (_lin(0.0, 0.3, num_bins), True),
            "ShearY": (_lin(0.0, 0.3, num_bins), True),
            "TranslateX": (_lin(0.0, w / 3.0, num_bins), True),
            "TranslateY": (_lin(0.0, h / 3.0, num_bins), True),
            "Rotate": (_lin(0.0, 30.0, num_bins), True),
            "Posterize": (_posterize_bins(4, num_bins, 4), False),
            "Solarize": (_lin(255.0, 0.0, num_bins), False),
            "AutoContrast": (_scalar(), False),
            "Equalize": (_scalar(), False),
        }
        if self.all_ops:
            space.update({
                "Brightness": (_lin(0.0, 0.9, num_bins), True),
                "Color": (_lin(0.0, 0.9, num_bins), True),
                "Contrast": (_lin(0.0, 0.9, num_bins), True),
                "Sharpness": (_lin(0.0, 0.9, num_bins), True),
            })
        return space

    @staticmethod
    def _sample_dirichlet(concentration):
        return ember.distributions.Dirichlet(concentration).sample()

    def forward(self, orig_img):
        is_tensor = isinstance(orig_img, ember.Tensor)
        fill = _tensor_fill(self.fill, orig_img)
        _, h, w = F.get_dimensions(orig_img)
        img = orig_img if is_tensor else F.pil_to_tensor(orig_img)
        space = self._augmentation_space(self._PARAMETER_MAX, (h, w))
        names = list(space)
        dims = list(img.shape)
        batch = img.reshape([1] * max(4 - img.ndim, 0) + dims)
        n = batch.shape[0]
        bdims = [n] + [1] * (batch.ndim - 1)
        m = self._sample_dirichlet(ember.tensor([self.alpha, self.alpha]).expand(n, -1))
        weights = self._sample_dirichlet(ember.tensor([self.alpha] * self.mixture_width).expand(n, -1))
        weights = weights * m[:, 1].reshape(n, -1)
        mix = m[:, 0].reshape(bdims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(ember.randint(1, 4, (1,)).item())
            for _ in range(depth):
                op_name = names[int(ember.randint(len(names), (1,)).item())]
                magnitudes, signed = space[op_name]
                magnitude = (_magnitude(magnitudes, int(ember.randint(self.severity, (1,)).item()))
                             if magnitudes.ndim > 0 else 0.0)
                if signed and _coin():
                    magnitude = -magnitude
                aug = _apply_op(aug, op_name, magnitude, self.interpolation, fill)
            mix = mix + weights[:, i].reshape(bdims) * aug
        mix = mix.reshape(dims).to(img.dtype)
        return mix if is_tensor else F.to_pil_image(mix)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
