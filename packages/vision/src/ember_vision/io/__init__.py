"""Image files (torchvision.io's image API): read/write bytes, decode and encode on pillow."""

from .image import (
    ImageReadMode,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    decode_webp,
    encode_jpeg,
    encode_png,
    read_file,
    read_image,
    write_file,
    write_jpeg,
    write_png,
)

__all__ = ["ImageReadMode", "read_file", "write_file", "decode_image", "decode_jpeg", "decode_png", "decode_gif",
           "decode_webp", "encode_jpeg", "encode_png", "read_image", "write_jpeg", "write_png"]
