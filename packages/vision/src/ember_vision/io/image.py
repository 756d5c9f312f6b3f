"""Image files to and from uint8 tensors ``[C, H, W]`` (torchvision.io's image API), on pillow.

Decoding takes the file's bytes as a 1-D uint8 tensor (``read_file``) and detects the
format: JPEG, PNG, GIF and WEBP.  ``mode`` converts the channels as torchvision does:
PNG colour to gray uses libpng's integer weights (0.2989, 0.587, rest for blue,
truncated), JPEG to gray asks the JPEG decoder for its luma plane, added alpha is opaque.

Differences from torchvision, by necessity or on purpose:

* 16-bit PNGs raise RuntimeError: torchvision returns uint16, a dtype ember lacks.
* Where torchvision's PNG decoder is wrong, ember gives its documented result: UNCHANGED
  on a palette PNG of 1, 2 or 4 bits per index gives the indices (torchvision returns the
  packed bytes), GRAY_ALPHA / RGB_ALPHA of a palette PNG without transparency give opaque
  alpha, and the alpha added to a 1, 2 or 4-bit gray PNG is opaque 255 (torchvision
  writes the bit depth's maximum, e.g. 1).
* Encoded bytes come from pillow's encoders, not libpng/libjpeg called directly: the
  files decode to the same pixels for PNG, and JPEG uses the same quality scale and 4:2:0
  chroma subsampling, but the bytes are not identical.

Source: https://pytorch.org/vision/stable/io.html
"""

from __future__ import annotations

import io as _bytes_io
import os
from enum import Enum

import numpy as np
from PIL import Image, ImageOps, ImageSequence

import ember

from ._channels import convert

__all__ = ["ImageReadMode", "read_file", "write_file", "decode_image", "decode_jpeg", "decode_png", "decode_gif",
           "decode_webp", "encode_jpeg", "encode_png", "read_image", "write_jpeg", "write_png"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_JPEG_SIGNATURE = b"\xff\xd8\xff"
_UNSUPPORTED = "Unsupported image file. Only jpeg, png, webp and gif are currently supported."


class ImageReadMode(Enum):
    """How decoding converts channels: UNCHANGED (as stored), GRAY, GRAY_ALPHA, RGB,
    RGB_ALPHA (alias RGBA). Functions also accept the names as strings (``"RGB"``)."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


_CHANNELS = {ImageReadMode.GRAY: 1, ImageReadMode.GRAY_ALPHA: 2, ImageReadMode.RGB: 3, ImageReadMode.RGB_ALPHA: 4}


def _mode(mode) -> ImageReadMode:
    if isinstance(mode, str):
        return ImageReadMode[mode.upper()]  # KeyError for an unknown name, as torchvision
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"mode should be an ImageReadMode or its name, got {type(mode).__name__}")
    return mode


# ---- files ----------------------------------------------------------------------------

def read_file(path) -> ember.Tensor:
    """The bytes of the file ``path`` (str or PathLike) as a uint8 tensor ``[N]``.

    Raises RuntimeError when the file cannot be read or is empty (torchvision's errors).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise RuntimeError(f"[Errno {e.errno}] {e.strerror}: '{path}'") from e
    if not data:
        raise RuntimeError(f"Expected a non empty file, got the empty file '{path}'")
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def _as_bytes(data, what: str = "input") -> bytes:
    """The bytes of a non-empty 1-D uint8 tensor (RuntimeError otherwise, as torchvision)."""
    if not isinstance(data, ember.Tensor):
        raise TypeError(f"{what} should be a uint8 Tensor of one dimension, got {type(data).__name__}")
    if data.dtype is not ember.uint8:
        raise RuntimeError(f"Expected a torch.uint8 tensor, got {data.dtype}")
    if data.ndim != 1 or data.numel() == 0:
        raise RuntimeError(f"Expected a non empty 1-dimensional tensor, got shape {list(data.shape)}")
    return data.detach().cpu().numpy().tobytes()


def write_file(filename, data: ember.Tensor) -> None:
    """Write the bytes of ``data``, a 1-D uint8 tensor, to the file ``filename`` (str or PathLike;
    torchvision.io.write_file).

    Raises TypeError for a non-tensor, RuntimeError for another dtype or number of dimensions.
    """
    if not isinstance(data, ember.Tensor):
        raise TypeError(f"data should be a uint8 Tensor of one dimension, got {type(data).__name__}")
    if data.dtype is not ember.uint8:
        raise RuntimeError(f"Input tensor dtype should be uint8, got {data.dtype}")
    if data.ndim != 1:
        raise RuntimeError(f"Input data should be a 1-dimensional tensor, got shape {list(data.shape)}")
    with open(os.fspath(filename), "wb") as f:
        f.write(data.detach().cpu().numpy().tobytes())


# ---- decoding -------------------------------------------------------------------------

def _open(buf: bytes, kind: str) -> Image.Image:
    try:
        img = Image.open(_bytes_io.BytesIO(buf))
        img.load()
    except Exception as e:  # pillow raises several types for broken files
        raise RuntimeError(f"could not decode the {kind} data: {e}") from e
    return img


def _array(img: Image.Image) -> np.ndarray:
    """A writable [H, W, C] uint8 array of ``img``."""
    arr = np.array(img, dtype=np.uint8)
    return arr[:, :, None] if arr.ndim == 2 else arr


def _to_tensor(arr: np.ndarray) -> ember.Tensor:
    # a [C, H, W] view of [H, W, C] memory, as torchvision returns
    return ember.from_numpy(np.ascontiguousarray(arr)).permute(2, 0, 1)


def _png_array(buf: bytes, mode: ImageReadMode, exif: bool) -> np.ndarray:
    if len(buf) < 8:
        raise RuntimeError(f"Content is too small for png! ({len(buf)} bytes)")
    if buf[:8] != _PNG_SIGNATURE:
        raise RuntimeError("Content is not png!")
    bit_depth = buf[24] if len(buf) > 25 else 8
    if bit_depth == 16:
        raise RuntimeError("16-bit PNGs decode to uint16, which ember does not have; convert the file to 8 bits")
    img = _open(buf, "png")
    if exif:
        img = ImageOps.exif_transpose(img)
    if img.mode == "P":
        if mode is ImageReadMode.UNCHANGED:
            return _array(img)  # palette indices, as libpng gives them untransformed
        return convert(_array(img.convert("RGBA")), _CHANNELS[mode])  # the palette's alpha is kept
    if img.mode == "1":
        img = img.convert("L")
    arr = _array(img)
    return arr if mode is ImageReadMode.UNCHANGED else convert(arr, _CHANNELS[mode])


def _jpeg_array(buf: bytes, mode: ImageReadMode, exif: bool) -> np.ndarray:
    if mode in (ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB_ALPHA):
        raise RuntimeError(f"The provided mode is not supported for JPEG files: {mode.name}")
    try:
        img = Image.open(_bytes_io.BytesIO(buf))
        if mode is ImageReadMode.GRAY:
            img.draft("L", None)  # the decoder's own luma plane, as libjpeg's JCS_GRAYSCALE
        img.load()
    except Exception as e:
        raise RuntimeError(f"could not decode the jpeg data: {e}") from e
    if exif:
        img = ImageOps.exif_transpose(img)
    if mode is ImageReadMode.GRAY and img.mode != "L":
        img = img.convert("L")
    elif mode is ImageReadMode.RGB and img.mode != "RGB":
        img = img.convert("RGB")
    return _array(img)


def decode_png(input: ember.Tensor, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False):
    """Decode the PNG bytes ``input`` (uint8 ``[N]``) to a uint8 tensor ``[C, H, W]``
    (torchvision.io.decode_png).

    ``mode`` (an ``ImageReadMode`` or its name): UNCHANGED keeps the stored channels (gray 1,
    gray+alpha 2, RGB 3, RGBA 4; a palette image gives its indices, 1 channel); other modes convert
    (see ``ImageReadMode``). ``apply_exif_orientation`` rotates/flips by the file's EXIF
    orientation tag.

    Raises RuntimeError for a non-uint8 or non-1-D input, data that is not a PNG, a
    corrupt file or a 16-bit PNG; KeyError for an unknown mode name.
    """
    mode = _mode(mode)
    return _to_tensor(_png_array(_as_bytes(input), mode, apply_exif_orientation))


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation: bool = False):
    """Decode the JPEG bytes ``input`` (uint8 ``[N]``, or a list of them) to uint8 ``[C, H, W]``
    tensor(s) (torchvision.io.decode_jpeg).

    ``mode``: UNCHANGED (1 channel for gray files, 3 for colour, 4 for CMYK), GRAY, RGB.
    ``apply_exif_orientation`` rotates/flips by the file's EXIF orientation tag. The result is
    moved to ``device`` (decoding itself runs on the CPU).

    Raises RuntimeError for a non-uint8 or non-1-D input, a corrupt file or an alpha mode;
    ValueError for an empty list or a list holding something other than tensors.
    """
    mode = _mode(mode)
    target = ember.device(device)
    if isinstance(input, list):
        if not input:
            raise ValueError("Input list must contain at least one element")
        if not all(isinstance(t, ember.Tensor) for t in input):
            raise ValueError("All elements of the input list must be tensors.")
        return [decode_jpeg(t, mode, device, apply_exif_orientation) for t in input]
    out = _to_tensor(_jpeg_array(_as_bytes(input), mode, apply_exif_orientation))
    return out if target.type == "cpu" else out.to(target)


def decode_gif(input: ember.Tensor) -> ember.Tensor:
    """Decode the GIF bytes ``input`` (uint8 ``[N]``) to RGB uint8 ``[3, H, W]``, or
    ``[F, 3, H, W]`` for F > 1 frames (frames as displayed, pillow composing them;
    torchvision.io.decode_gif). Raises RuntimeError for bad input or a corrupt file.
    """
    buf = _as_bytes(input)
    img = _open(buf, "gif")
    frames = [_array(frame.convert("RGB")) for frame in ImageSequence.Iterator(img)]
    if len(frames) == 1:
        return _to_tensor(frames[0])
    return ember.from_numpy(np.ascontiguousarray(np.stack(frames))).permute(0, 3, 1, 2)


def decode_webp(input: ember.Tensor, mode=ImageReadMode.UNCHANGED) -> ember.Tensor:
    """Decode the WEBP bytes ``input`` (uint8 ``[N]``) to uint8 ``[C, H, W]``
    (torchvision.io.decode_webp): ``mode`` UNCHANGED gives RGB or RGBA as stored; RGB and
    RGB_ALPHA convert. Raises RuntimeError for the gray modes, bad input or a corrupt file.
    """
    mode = _mode(mode)
    if mode in (ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA):
        raise RuntimeError(f"The provided mode is not supported for WEBP files: {mode.name}")
    img = _open(_as_bytes(input), "webp")
    if mode is ImageReadMode.UNCHANGED:
        img = img.convert("RGBA" if img.mode in ("RGBA", "LA", "PA") else "RGB")
    else:
        img = img.convert("RGB" if mode is ImageReadMode.RGB else "RGBA")
    return _to_tensor(_array(img))


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> ember.Tensor:
    """Decode JPEG, PNG, GIF or WEBP bytes ``input`` (uint8 ``[N]``), or the file at a path, to
    uint8 ``[C, H, W]`` (``[F, C, H, W]`` for an animated GIF); the format is read from the
    data's signature (torchvision.io.decode_image). ``mode`` and ``apply_exif_orientation``
    apply to JPEG and PNG (``mode`` also to WEBP).

    Raises RuntimeError for an unknown format or bad input (as torchvision).
    """
    if not isinstance(input, ember.Tensor):
        input = read_file(input)
    mode = _mode(mode)
    buf = _as_bytes(input)
    if buf[:3] == _JPEG_SIGNATURE:
        return _to_tensor(_jpeg_array(buf, mode, apply_exif_orientation))
    if buf[:4] == _PNG_SIGNATURE[:4]:
        return _to_tensor(_png_array(buf, mode, apply_exif_orientation))
    if buf[:6] in (b"GIF87a", b"GIF89a"):
        return decode_gif(input)
    if len(buf) >= 15 and buf[:4] == b"RIFF" and buf[8:15] == b"WEBPVP8":
        return decode_webp(input, mode)
    raise RuntimeError(_UNSUPPORTED)


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> ember.Tensor:
    """``decode_image(read_file(path), mode, apply_exif_orientation)``: the image file at
    ``path`` (str or PathLike) as uint8 ``[C, H, W]``, with the ``mode`` and
    ``apply_exif_orientation`` of ``decode_image`` (torchvision.io.read_image).
    """
    return decode_image(read_file(path), mode, apply_exif_orientation=apply_exif_orientation)


# ---- encoding -------------------------------------------------------------------------

def _image_array(input, what: str) -> np.ndarray:
    """[H, W] or [H, W, 3] uint8 array of a uint8 ``[C, H, W]`` tensor with C in (1, 3)."""
    if not isinstance(input, ember.Tensor):
        raise TypeError(f"{what}: input should be a uint8 Tensor [C, H, W], got {type(input).__name__}")
    if input.dtype is not ember.uint8:
        raise RuntimeError(f"Input tensor dtype should be uint8, got {input.dtype}")
    if input.ndim != 3:
        raise RuntimeError(f"Input data should be a 3-dimensional tensor, got shape {list(input.shape)}")
    if input.shape[0] not in (1, 3):
        raise RuntimeError(f"The number of channels should be 1 or 3, got: {input.shape[0]}")
    arr = input.detach().cpu().numpy().transpose(1, 2, 0)
    return np.ascontiguousarray(arr[:, :, 0] if arr.shape[2] == 1 else arr)


def _encoded(img: Image.Image, **options) -> ember.Tensor:
    buf = _bytes_io.BytesIO()
    img.save(buf, **options)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def encode_png(input: ember.Tensor, compression_level: int = 6) -> ember.Tensor:
    """The uint8 image ``input`` ``[C, H, W]`` (C = 1 or 3) as the bytes of a PNG file, uint8 ``[N]``,
    zlib ``compression_level`` 0..9 (torchvision.io.encode_png).

    Raises RuntimeError for ``compression_level`` outside 0..9, another dtype, number of
    dimensions or channels (torchvision's errors).
    """
    if not 0 <= compression_level <= 9:
        raise RuntimeError(f"Compression level should be between 0 and 9, got {compression_level}")
    return _encoded(Image.fromarray(_image_array(input, "encode_png")), format="PNG",
                    compress_level=int(compression_level))


def encode_jpeg(input, quality: int = 75):
    """The uint8 image ``input`` ``[C, H, W]`` (C = 1 or 3), or a list of them, as JPEG file bytes
    (uint8 ``[N]``, or a list) at ``quality`` 1..100 (torchvision.io.encode_jpeg).

    Raises ValueError for ``quality`` outside 1..100 or an empty list; RuntimeError for
    another dtype, number of dimensions or channels.
    """
    if quality < 1 or quality > 100:
        raise ValueError(f"Image quality should be a positive number between 1 and 100, got {quality}")
    if isinstance(input, list):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode_jpeg(image, quality) for image in input]
    return _encoded(Image.fromarray(_image_array(input, "encode_jpeg")), format="JPEG", quality=int(quality))


def write_png(input: ember.Tensor, filename, compression_level: int = 6) -> None:
    """Save the uint8 image ``input`` ``[C, H, W]`` (C = 1 or 3) as a PNG file ``filename`` with
    ``compression_level`` 0..9 (errors of ``encode_png``; torchvision.io.write_png).
    """
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input: ember.Tensor, filename, quality: int = 75) -> None:
    """Save the uint8 image ``input`` ``[C, H, W]`` (C = 1 or 3) as a JPEG file ``filename`` at
    ``quality`` 1..100 (errors of ``encode_jpeg``; torchvision.io.write_jpeg).
    """
    write_file(filename, encode_jpeg(input, quality))
