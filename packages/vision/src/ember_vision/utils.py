"""Image grids and annotation drawing (torchvision.utils): make_grid, save_image,
draw_bounding_boxes, draw_segmentation_masks.

Layouts and pixels follow torchvision: grids are assembled with ember ops (so they stay
differentiable), boxes and labels are drawn by pillow's ImageDraw exactly as torchvision
draws them, masks are blended in the image's dtype arithmetic.

Source: https://pytorch.org/vision/stable/utils.html
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFont

import ember

__all__ = ["make_grid", "save_image", "draw_bounding_boxes", "draw_segmentation_masks"]

# the automatic palette: object i gets (i * these) % 255
_PALETTE = (2**25 - 1, 2**15 - 1, 2**21 - 1)
_DASH = 5  # length of the dashes, and of the gaps, on the first edge of an oriented box


def _as_batch(tensor) -> ember.Tensor:
    if isinstance(tensor, list):
        for t in tensor:
            if not isinstance(t, ember.Tensor):
                raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        tensor = ember.stack(tensor, dim=0)
    elif not isinstance(tensor, ember.Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if tensor.ndim == 2:  # one image [H, W]
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 3:  # one image [C, H, W]; one channel becomes three
        if tensor.shape[0] == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 4 and tensor.shape[1] == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    return tensor


def _normalize_(t: ember.Tensor, low: float, high: float) -> None:
    t.clamp_(min=low, max=high)
    t.sub_(low).div_(max(high - low, 1e-5))


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False, value_range=None,
              scale_each: bool = False, pad_value: float = 0.0) -> ember.Tensor:
    """Tile a batch of images into one image.

    Args:
        tensor: ``[B, C, H, W]``, a list of ``[C, H, W]`` images of one size, one image
            ``[C, H, W]`` or ``[H, W]``. One-channel images are repeated to three.
        nrow: images per row; the grid has ``ceil(B / nrow)`` rows.
        padding: pixels of ``pad_value`` around and between the images.
        normalize: shift and scale the values to [0, 1] by ``value_range`` (min, max),
            else by the tensor's min and max (each image's when ``scale_each``).
        pad_value: value of the padding.

    Returns: ``[C, padding + rows * (H + padding), padding + cols * (W + padding)]`` in the
    input's dtype; a single image comes back without padding (``[C, H, W]``).

    Raises TypeError for a non-tensor input or a ``value_range`` that is not a tuple.
    """
    tensor = _as_batch(tensor)
    if normalize is True:
        tensor = tensor.clone()  # normalized in place below
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        parts = tensor if scale_each is True else [tensor]
        for t in parts:  # one range per image (scale_each) or one for the batch
            low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
            _normalize_(t, low, high)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)

    count, channels, h, w = tensor.shape
    cols = min(nrow, count)
    rows = int(math.ceil(float(count) / cols))
    cell_h, cell_w = int(h + padding), int(w + padding)
    if rows * cols > count:  # empty cells keep the padding value
        tensor = ember.cat([tensor, tensor.new_full((rows * cols - count, channels, h, w), pad_value)])
    # cell (r, c) holds its image in the top-left [H, W] corner, padding below and right
    cells = tensor.new_full((channels, rows, cell_h, cols, cell_w), pad_value)
    cells[:, :, :h, :, :w] = tensor.reshape(rows, cols, channels, h, w).permute(2, 0, 3, 1, 4)
    grid = tensor.new_full((channels, rows * cell_h + padding, cols * cell_w + padding), pad_value)
    grid[:, padding:, padding:] = cells.reshape(channels, rows * cell_h, cols * cell_w)
    return grid


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:
    """Save ``tensor`` (a float image ``[C, H, W]``, a batch ``[N, C, H, W]`` or a list of
    images, as ``make_grid`` takes them, with its keyword arguments) to an image file ``fp``
    (path or binary file object; ``format`` is needed for a file object;
    torchvision.utils.save_image).

    Values in [0, 1] map to 0..255 rounded to nearest (``x * 255 + 0.5``, clamped).
    """
    with ember.no_grad():
        grid = make_grid(tensor, **kwargs)
        arr = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", ember.uint8).numpy()
    Image.fromarray(np.ascontiguousarray(arr)).save(fp, format=format)


def _palette(count: int) -> list:
    return [tuple((i * p) % 255 for p in _PALETTE) for i in range(count)]


def _parse_colors(colors, count: int, floating: bool = False) -> list:
    """``count`` RGB triplets from None (automatic palette), one colour, or a list of them;
    a colour is a pillow name/``#rrggbb`` string or an ``(r, g, b)`` tuple."""
    if colors is None:
        colors = _palette(count)
    elif isinstance(colors, list):
        if len(colors) < count:
            raise ValueError(f"Number of colors must be equal or larger than the number of objects, "
                             f"but got {len(colors)} < {count}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * count
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    if floating:
        colors = [tuple(v / 255 for v in c) for c in colors]
    return colors


def _check_image(image, what: str) -> None:
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"{what} expected, got {type(image)}")
    if not (image.dtype is ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.ndim != 3:
        raise ValueError(f"Pass individual images, not batches: expected [C, H, W], got shape {list(image.shape)}")


def _dashed_line(draw, start, end, fill, width) -> None:
    """Dashes of ``_DASH`` pixels separated by gaps of ``_DASH``, starting with a dash."""
    (x1, y1), (x2, y2) = start, end
    remaining = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
    dash = True
    while remaining > 0:
        step = min(remaining, _DASH)
        angle = math.atan2(y2 - y1, x2 - x1)  # from the current point, as torchvision (same pixels)
        nx, ny = x1 + math.cos(angle) * step, y1 + math.sin(angle) * step
        if dash:
            draw.line([(x1, y1), (nx, ny)], fill, width, None)
        remaining -= step
        x1, y1 = nx, ny
        dash = not dash


def _oriented_box(draw, xy, fill, outline, width) -> None:
    # the first edge is dashed to show the box's orientation, the other three are solid
    _dashed_line(draw, (xy[0], xy[1]), (xy[2], xy[3]), outline, width)
    n = len(xy)
    for i in range(2, n, 2):
        draw.line(((xy[i], xy[i + 1]), (xy[(i + 2) % n], xy[(i + 3) % n])), width=width, fill=outline)
    draw.polygon(xy, fill=fill, outline=None, width=0)


def draw_bounding_boxes(image: ember.Tensor, boxes: ember.Tensor, labels=None, colors=None, fill: bool = False,
                        width: int = 1, font: str | None = None, font_size: int | None = None, label_colors=None,
                        label_background_colors=None, fill_labels: bool = False) -> ember.Tensor:
    """Draw boxes (and their labels) on an image.

    Args:
        image: ``[C, H, W]``, C = 1 or 3, uint8 in [0, 255] or float in [0, 1].
        boxes: ``[N, 4]`` as (xmin, ymin, xmax, ymax) in pixels, or ``[N, 8]`` as the four
            corners of oriented boxes (first edge dashed). Coordinates are truncated to
            integers.
        labels: N strings drawn at each box's top-left corner inside the outline.
        colors: one colour or a list (pillow name, ``#rrggbb`` or ``(r, g, b)``); default
            an automatic palette.
        fill: also fill the boxes with their colour at alpha 100/255.
        width: outline width in pixels.
        font, font_size: a TrueType font file and its size (default 10); without ``font``
            pillow's default font is used and ``font_size`` ignored (with a warning).
        label_colors: text colours; default the box colours, or black with ``fill_labels``.
        label_background_colors, fill_labels: fill a rectangle behind each label.

    Returns: uint8 ``[3, H, W]`` (float in the image's dtype for a float image); a
    one-channel image is drawn on as RGB. With no boxes, the image itself (with a warning).

    Raises TypeError for a non-tensor image; ValueError for another dtype, a batch,
    another channel count, boxes with xmin > xmax or ymin > ymax, or label/colour counts
    that do not match the boxes.
    """
    _check_image(image, "Tensor")
    if image.shape[0] not in (1, 3):
        raise ValueError(f"Only grayscale and RGB images are supported, got {image.shape[0]} channels")
    if boxes.shape[-1] == 4 and bool(((boxes[:, 0] > boxes[:, 2]) | (boxes[:, 1] > boxes[:, 3])).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. "
                         "Use ember_vision.ops.box_convert to convert them")
    count = boxes.shape[0]
    if count == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * count
    elif len(labels) != count:
        raise ValueError(f"Number of boxes ({count}) and labels ({len(labels)}) mismatch. "
                         "Please specify labels for each box.")
    colors = _parse_colors(colors, count)
    if label_colors or fill_labels:
        label_colors = _parse_colors(label_colors if label_colors else "black", count)
    else:
        label_colors = list(colors)
    if fill_labels and label_background_colors:
        label_background_colors = _parse_colors(label_background_colors, count)
    else:
        label_background_colors = list(colors)
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.", stacklevel=2)
        text_font = ImageFont.load_default()
    else:
        text_font = ImageFont.truetype(font=font, size=font_size or 10)

    original = image.dtype
    with ember.no_grad():
        if image.shape[0] == 1:
            image = ember.tile(image, (3, 1, 1))
        if image.is_floating_point():
            # to_dtype(scale=True): x * (256 - 1e-3), truncated, so 1.0 maps to 255
            image = image.mul(255 + 1.0 - 1e-3).to(ember.uint8)
        canvas = Image.fromarray(np.ascontiguousarray(image.cpu().numpy().transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas, "RGBA" if fill else None)
    for box, color, label, text_color, text_bg in zip(boxes.to(ember.int64).tolist(), colors, labels, label_colors,
                                                      label_background_colors):
        fill_color = color + (100,) if fill else None
        if len(box) > 4:
            _oriented_box(draw, box, fill=fill_color, outline=color, width=width)
        else:
            draw.rectangle(box, width=width, outline=color, fill=fill_color)
        if label is not None:
            margin = width + 1
            corner = (box[0] + margin, box[1] + margin)
            if fill_labels:
                left, top, right, bottom = draw.textbbox(corner, label, font=text_font)
                draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=text_bg)
            draw.text(corner, label, fill=text_color, font=text_font)

    out = ember.from_numpy(np.array(canvas).transpose(2, 0, 1).copy())
    if original.is_floating_point:
        out = out.to(original).mul_(1.0 / 255)
    return out


def draw_segmentation_masks(image: ember.Tensor, masks: ember.Tensor, alpha: float = 0.8,
                            colors=None) -> ember.Tensor:
    """Blend boolean masks over an RGB image: ``image * (1 - alpha) + painted * alpha``, where
    ``painted`` is the image with each mask's pixels set to its colour (later masks over
    earlier ones) and pixels under two or more masks set to 0.

    Args:
        image: ``[3, H, W]``, uint8 in [0, 255] or float in [0, 1].
        masks: bool ``[N, H, W]`` or ``[H, W]``.
        alpha: opacity of the masks, 0 (invisible) to 1 (opaque).
        colors: one colour or a list (pillow name, ``#rrggbb`` or ``(r, g, b)``); default
            an automatic palette.

    Returns: ``[3, H, W]`` in the image's dtype (uint8 results truncated). With no masks,
    the image itself (with a warning).

    Raises TypeError for a non-tensor image; ValueError for another dtype, a batch, a
    non-RGB image, masks of another rank, dtype or size.
    """
    _check_image(image, "The image must be a tensor:")
    if image.shape[0] != 3:
        raise ValueError(f"Pass an RGB image. Other Image formats are not supported: got {image.shape[0]} channels")
    if masks.ndim == 2:
        masks = masks[None, :, :]
    if masks.ndim != 3:
        raise ValueError(f"masks must be of shape (H, W) or (batch_size, H, W), got {list(masks.shape)}")
    if masks.dtype is not ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if tuple(masks.shape[-2:]) != tuple(image.shape[-2:]):
        raise ValueError(f"The image and the masks must have the same height and width, got image "
                         f"{list(image.shape[-2:])} and masks {list(masks.shape[-2:])}")
    count = masks.shape[0]
    if count == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn", stacklevel=2)
        return image
    original = image.dtype
    with ember.no_grad():
        overlap = masks.sum(dim=0) > 1
        painted = image.detach().clone()
        for mask, color in zip(masks, _parse_colors(colors, count, floating=original.is_floating_point)):
            painted[:, mask] = ember.tensor(color, dtype=original, device=image.device)[:, None]
        painted[:, overlap] = 0
        out = image * (1 - alpha) + painted * alpha
        return out.to(original)
