"""AlexNet (torchvision.models.alexnet), in the single-GPU layout of Krizhevsky,
"One weird trick for parallelizing convolutional neural networks", arXiv:1404.5997.
State_dict keys and shapes are torchvision's."""

from functools import partial
from typing import Any, Optional

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["AlexNet", "AlexNet_Weights", "alexnet"]


class AlexNet(nn.Module):
    """AlexNet: five convolutions, adaptive pooling to 6x6, three linear layers (Krizhevsky,
    2014, "One weird trick for parallelizing convolutional neural networks", arXiv:1404.5997;
    torchvision.models.AlexNet).

    Input ``[N, 3, H, W]`` float (H, W >= 63), output logits ``[N, num_classes]``; ``dropout``
    is the probability of the two dropout layers of the classifier, ``num_classes`` the
    number of outputs.
    """

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        # (in, out, kernel, stride, padding, max-pool after)
        convs = [(3, 64, 11, 4, 2, True), (64, 192, 5, 1, 2, True), (192, 384, 3, 1, 1, False),
                 (384, 256, 3, 1, 1, False), (256, 256, 3, 1, 1, True)]
        layers: list[nn.Module] = []
        for c_in, c_out, k, s, p, pool in convs:
            layers += [nn.Conv2d(c_in, c_out, kernel_size=k, stride=s, padding=p), nn.ReLU(inplace=True)]
            if pool:
                layers.append(nn.MaxPool2d(kernel_size=3, stride=2))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


class AlexNet_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`alexnet` (torchvision's checkpoint,
    torchvision.models.AlexNet_Weights): ``IMAGENET1K_V1`` (acc@1 56.522 %, acc@5 79.066 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    61,100,840 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            "num_params": 61100840,
            "min_size": (63, 63),
            "categories": _IMAGENET_CATEGORIES,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 56.522, "acc@5": 79.066}},
            "_ops": 0.714,
            "_file_size": 233.087,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", AlexNet_Weights.IMAGENET1K_V1))
def alexnet(*, weights: Optional[AlexNet_Weights] = None, progress: bool = True, **kwargs: Any) -> AlexNet:
    """AlexNet; ``weights`` (an ``AlexNet_Weights`` member or its name) loads pretrained
    weights, ``progress`` shows the download's progress bar, ``kwargs`` go to ``AlexNet``.

    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = AlexNet_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(AlexNet(**kwargs), weights, progress)
