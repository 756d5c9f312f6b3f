"""Classify one image with a model of the ember_vision zoo.

    python examples/vision/classify.py IMAGE --model NAME [--weights FILE] [--topk K]

NAME is a builder name (``efficientnet_lite0``, ``resnet18``, ``mobilenet_v3_small`` ...;
``ember_vision.models.list_models()`` lists them). Without ``--weights`` the model's default
pretrained weights are used (downloaded once into the hub cache); ``--weights`` takes a local
file instead, in any format ember reads: safetensors, torch's zip checkpoint, or torch's
legacy checkpoint (for ``efficientnet_lite0`` also the EfficientNet-PyTorch key layout).

Each model's own preprocessing (its weights' ``transforms()``) prepares the image: the
ImageNet models take it in colour, ``fashion_resnet`` as a 28x28 grayscale image.

stdout holds only the K best classes, best first, one ``label<TAB>probability`` per line;
messages and errors go to stderr, with exit status 1 on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from PIL import Image, UnidentifiedImageError

import ember
from ember.hub import load_state_dict_from_url
from ember_vision import models
from ember_vision.models.efficientnet import efficientnet_lite0_state_dict_from_efficientnet_pytorch


class ClassifyError(Exception):
    """A problem with the user's input, reported on stderr without a traceback."""


def build_model(name: str, weights_file: str | None):
    """``(model in eval mode, preprocessing transform, category names)`` for ``name``."""
    if name.lower() not in models.list_models():
        raise ClassifyError(f"unknown model {name!r}; expected one of: {', '.join(models.list_models())}")
    try:
        default = models.get_model_weights(name).DEFAULT
    except ValueError:
        raise ClassifyError(f"model {name!r} has no pretrained weights (no categories to name)") from None
    if weights_file is None:
        # downloads announce themselves on stdout; keep stdout for the results
        try:
            with contextlib.redirect_stdout(sys.stderr):
                model = models.get_model(name, weights=default)
        except (OSError, RuntimeError) as exc:  # no network, offline cache miss, bad download
            raise ClassifyError(f"cannot load the default weights of {name} ({default}): {exc}") from None
    else:
        if not os.path.isfile(weights_file):
            raise ClassifyError(f"weights file not found: {weights_file}")
        try:
            state = load_state_dict_from_url(os.path.abspath(weights_file), map_location="cpu")
        except Exception as exc:  # any unreadable file: say which and why
            raise ClassifyError(f"cannot read weights file {weights_file}: {exc}") from None
        if not isinstance(state, dict):
            raise ClassifyError(f"weights file {weights_file} holds a {type(state).__name__}, expected a state_dict")
        if name.lower() == "efficientnet_lite0" and "_conv_stem.weight" in state:
            state = efficientnet_lite0_state_dict_from_efficientnet_pytorch(state)
        model = models.get_model(name, num_classes=len(default.meta["categories"]))
        try:
            model.load_state_dict(state)
        except (RuntimeError, KeyError) as exc:
            raise ClassifyError(f"weights file {weights_file} does not fit {name}: {exc}") from None
    return model.eval(), default.transforms(), default.meta["categories"]


def classify(image_path: str, name: str, weights_file: str | None, topk: int) -> list[tuple[str, float]]:
    """The ``topk`` most probable ``(label, probability)`` pairs, best first."""
    if not os.path.isfile(image_path):
        raise ClassifyError(f"image file not found: {image_path}")
    try:
        with Image.open(image_path) as img:
            image = img.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise ClassifyError(f"cannot read image {image_path}: {exc}") from None
    model, preprocess, categories = build_model(name, weights_file)
    with ember.no_grad():
        probs = ember.softmax(model(preprocess(image).unsqueeze(0)).float(), dim=1)[0]
    top = probs.topk(min(topk, probs.shape[0]))
    return [(categories[i], p) for p, i in zip(top.values.tolist(), top.indices.tolist())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Classify an image with an ember_vision model.")
    parser.add_argument("image", help="path of the image (any format Pillow reads)")
    parser.add_argument("--model", required=True, help="builder name, e.g. efficientnet_lite0 or resnet18")
    parser.add_argument("--weights", help="local weights file (safetensors, torch zip or legacy checkpoint)")
    parser.add_argument("--topk", type=int, default=5, help="number of classes to print (default 5)")
    args = parser.parse_args(argv)
    if args.topk < 1:
        parser.error(f"--topk must be at least 1, got {args.topk}")
    try:
        results = classify(args.image, args.model, args.weights, args.topk)
    except ClassifyError as exc:
        print(f"classify.py: error: {exc}", file=sys.stderr)
        return 1
    for label, prob in results:
        print(f"{label}\t{prob:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
