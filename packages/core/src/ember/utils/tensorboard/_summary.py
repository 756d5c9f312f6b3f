"""Summary protocol buffers for TensorBoard, built with the ``tensorboard`` package's own
protos (no protobuf code of ours): scalars, histograms, images, text."""

from __future__ import annotations

import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

__all__ = ["to_numpy", "scalar", "histogram", "image", "text", "TENSORFLOW_BINS"]


def _tensorflow_bins() -> np.ndarray:
    """TensorFlow's default histogram buckets (histogram.cc): +-1e-12 growing by 10% to 1e20."""
    positive = []
    v = 1e-12
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    return np.array([-b for b in reversed(positive)] + [0.0] + positive)


TENSORFLOW_BINS = _tensorflow_bins()


def to_numpy(value) -> np.ndarray:
    """An ember tensor, numpy array or Python number as a numpy array."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype).endswith("bfloat16"):
            value = value.float()
        return np.asarray(value.numpy())
    return np.asarray(value)


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    v = to_numpy(value).squeeze()
    if v.ndim != 0:  # torch's exception type
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {v.size} and "
                             f"{v.ndim} dimensions.")
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=float(v))])
    tensor = TensorProto(dtype="DT_DOUBLE", double_val=[float(v)]) if double_precision else \
        TensorProto(dtype="DT_FLOAT", float_val=[float(v)])
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=metadata)])


def histogram(tag: str, values, bins, max_bins=None) -> Summary:
    """Counts of ``values`` in ``bins`` (numpy's ``histogram`` bins argument, or
    TENSORFLOW_BINS), at most ``max_bins`` buckets (neighbours merged), trimmed to the buckets
    that hold values plus one empty bucket on the left, since TensorBoard reads only each
    bucket's right limit."""
    values = to_numpy(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    filled = np.nonzero(counts)[0]
    first, last = int(filled[0]), int(filled[-1])
    kept = counts[first - 1:last + 1] if first > 0 else np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    return Summary(value=[Summary.Value(tag=tag, histo=HistogramProto(
        min=values.min(), max=values.max(), num=len(values), sum=values.sum(), sum_squares=values.dot(values),
        bucket_limit=limits.tolist(), bucket=kept.tolist()))])


def _hwc_uint8(img: np.ndarray, dataformats: str) -> np.ndarray:
    """An image in ``dataformats`` ("CHW", "HWC", "HW", ...) as [H, W, C] uint8; floats are
    taken to lie in [0, 1] and scaled by 255, truncating, and one channel is repeated into
    three (torch's conventions)."""
    dataformats = dataformats.upper()
    if len(set(dataformats)) != len(dataformats) or img.ndim != len(dataformats):
        raise ValueError(f"size of input tensor and input format are different. tensor shape: {img.shape}, "
                         f"input_format: {dataformats}")
    if "C" not in dataformats:
        img, dataformats = img[..., None], dataformats + "C"
    img = np.transpose(img, [dataformats.index(c) for c in "HWC"])
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if img.dtype != np.uint8:
        img = np.clip(img.astype(np.float64) * 255, 0, 255).astype(np.uint8)
    return img


def grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """[N, C, H, W] images tiled row by row into one [C, H * rows, W * min(N, ncols)] image."""
    n, c, h, w = images.shape
    cols = min(n, ncols)
    rows = -(-n // cols)
    canvas = np.zeros((c, h * rows, w * cols), dtype=images.dtype)
    for i in range(n):
        r, k = divmod(i, cols)
        canvas[:, r * h:(r + 1) * h, k * w:(k + 1) * w] = images[i]
    return canvas


def image(tag: str, img, dataformats: str = "CHW") -> Summary:
    """A PNG-encoded image summary (pillow encodes it)."""
    from PIL import Image

    hwc = _hwc_uint8(to_numpy(img), dataformats)
    height, width, channels = hwc.shape
    buffer = io.BytesIO()
    Image.fromarray(hwc).save(buffer, format="PNG")
    return Summary(value=[Summary.Value(tag=tag, image=Summary.Image(
        height=height, width=width, colorspace=channels, encoded_image_string=buffer.getvalue()))])


def text(tag: str, text_string: str) -> Summary:
    """A string for TensorBoard's text plugin, under ``<tag>/text_summary`` as torch writes it."""
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=tensor)])
