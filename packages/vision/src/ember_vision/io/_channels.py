"""Channel conversions of decoded images ([H, W, C] uint8 arrays), as libpng does them for
torchvision's read modes."""

from __future__ import annotations

import numpy as np

# torchvision asks libpng for rgb_to_gray(0.2989, 0.587); libpng stores the weights as
# 15-bit fixed point, truncating (29890 * 32768 // 100000, 58700 * 32768 // 100000), blue
# takes the rest, and the weighted sum is truncated (>> 15).
_RED, _GREEN = 29890 * 32768 // 100000, 58700 * 32768 // 100000
_BLUE = 32768 - _RED - _GREEN


def rgb_to_gray(rgb: np.ndarray) -> np.ndarray:
    """[H, W, 3] uint8 -> [H, W, 1] uint8 with libpng's integer weights."""
    c = rgb.astype(np.uint32)
    gray = (_RED * c[..., 0] + _GREEN * c[..., 1] + _BLUE * c[..., 2]) >> 15
    return gray.astype(np.uint8)[..., None]


def opaque(arr: np.ndarray) -> np.ndarray:
    """A fully opaque alpha channel [H, W, 1] for ``arr``."""
    return np.full(arr.shape[:2] + (1,), 255, dtype=np.uint8)


def convert(arr: np.ndarray, channels: int) -> np.ndarray:
    """``arr`` [H, W, C] with C in 1 (gray), 2 (gray+alpha), 3 (RGB), 4 (RGBA) converted to
    ``channels`` the same way: colour to gray by libpng's weights, gray to colour by copies,
    alpha dropped or added opaque."""
    have = arr.shape[2]
    if have == channels:
        return arr
    color, alpha = (arr[..., :3], arr[..., 3:]) if have >= 3 else (arr[..., :1], arr[..., 1:])
    if not alpha.shape[2]:
        alpha = opaque(arr)
    if channels <= 2:
        gray = rgb_to_gray(color) if color.shape[2] == 3 else color
        return gray if channels == 1 else np.concatenate([gray, alpha], axis=2)
    rgb = color if color.shape[2] == 3 else np.repeat(color, 3, axis=2)
    return rgb if channels == 3 else np.concatenate([rgb, alpha], axis=2)
