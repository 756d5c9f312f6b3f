"""Tensor kernels for image transforms (torchvision.transforms._functional_tensor).

Images are ember tensors ``[..., C, H, W]``, uint8 (values 0..255) or float (values
0..1). Every kernel is written with ember ops, so float inputs stay differentiable.
Integer images are computed in float32 and rounded back, as torchvision does.
"""

from __future__ import annotations

import ember
import ember.nn.functional as nnf

_INT_DTYPES = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)


def _is_float(dtype) -> bool:
    return dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64)


def _assert_image_tensor(img) -> None:
    if not isinstance(img, ember.Tensor) or img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def _max_value(dtype) -> int | float:
    """Largest value of an image of this dtype: 255 for uint8, 1.0 for floats."""
    if dtype == ember.uint8:
        return 255
    if dtype == ember.int8:
        return 127
    if dtype == ember.int16:
        return 32767
    if dtype == ember.int32:
        return 2147483647
    if dtype == ember.int64:
        return 9223372036854775807
    return 1.0


def get_dimensions(img) -> list[int]:
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    return [channels, img.shape[-2], img.shape[-1]]


def get_image_size(img) -> list[int]:
    _assert_image_tensor(img)
    return [img.shape[-1], img.shape[-2]]


def get_image_num_channels(img) -> int:
    return get_dimensions(img)[0]


def _assert_channels(img, permitted) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def convert_image_dtype(image, dtype=ember.float32):
    """Convert between image dtypes, rescaling values to the target range."""
    if image.dtype == dtype:
        return image
    if _is_float(image.dtype):
        if _is_float(dtype):
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or (
            image.dtype == ember.float64 and dtype == ember.int64
        ):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        # max + 1 - eps spreads [0, 1] evenly over the integer bins; only 1.0 maps to max.
        return image.mul(float(_max_value(dtype)) + 1.0 - 1e-3).to(dtype)
    input_max = float(_max_value(image.dtype))
    if _is_float(dtype):
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def _to_4d(img, float_dtype=None):
    """Flatten leading dims to a batch ``[N, C, H, W]`` and cast to a float compute dtype.

    Returns the tensor and a function that undoes both (rounding for integer dtypes).
    """
    shape, dtype = tuple(img.shape), img.dtype
    x = img.reshape(-1, *shape[-3:]) if img.ndim != 4 else img
    if float_dtype is None:
        float_dtype = dtype if dtype in (ember.float32, ember.float64) else ember.float32
    if x.dtype != float_dtype:
        x = x.to(float_dtype)

    def restore(out):
        if out.ndim != len(shape) or tuple(out.shape[:-3]) != shape[:-3]:
            out = out.reshape(*shape[:-3], *out.shape[-3:])
        if out.dtype != dtype:
            if dtype in _INT_DTYPES:
                out = out.round()
            out = out.to(dtype)
        return out

    return x, restore


def vflip(img):
    _assert_image_tensor(img)
    return img.flip(-2)


def hflip(img):
    _assert_image_tensor(img)
    return img.flip(-1)


def crop(img, top: int, left: int, height: int, width: int):
    """Crop ``[..., H, W]``; regions outside the image are zero-padded (as torchvision)."""
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        inside = img[..., max(top, 0) : min(bottom, h), max(left, 0) : min(right, w)]
        padding = [max(-left, 0), max(-top, 0), max(right - w, 0), max(bottom - h, 0)]
        return pad(inside, padding, fill=0)
    return img[..., top:bottom, left:right]


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """ITU-R 601-2 luma ``0.2989 R + 0.587 G + 0.114 B`` (truncated for integer images)."""
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)
    else:
        gray = img.clone()
    if num_output_channels == 3:
        return gray.expand(img.shape)
    return gray


def _blend(img1, img2, ratio: float):
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img, brightness_factor: float):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    return _blend(img, ember.zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    gray = rgb_to_grayscale(img) if img.shape[-3] == 3 else img
    mean = gray.to(dtype).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-3] == 1:  # as PIL: nothing to desaturate
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb2hsv(img):
    """RGB in [0, 1] to HSV in [0, 1] (Pillow's conversion formulas, in float)."""
    r, g, b = img.unbind(dim=-3)
    maxc = img.amax(dim=-3)
    minc = img.amin(dim=-3)
    # Where max == min, hue and saturation are 0; dividing by 1 there avoids NaN.
    flat = maxc == minc
    chroma = maxc - minc
    ones = ember.ones_like(maxc)
    s = chroma / ember.where(flat, ones, maxc)
    div = ember.where(flat, ones, chroma)
    rc = (maxc - r) / div
    gc = (maxc - g) / div
    bc = (maxc - b) / div
    is_r = maxc == r
    is_g = (maxc == g) & ~is_r
    is_b = ~(maxc == g) & ~is_r
    h = is_r * (bc - gc) + is_g * (2.0 + rc - bc) + is_b * (4.0 + gc - rc)
    h = ember.fmod(h / 6.0 + 1.0, 1.0)
    return ember.stack((h, s, maxc), dim=-3)


def _hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = ember.floor(h * 6.0)
    f = h * 6.0 - i
    sector = (i.to(ember.int64) % 6).unsqueeze(-3)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    # For each hue sector 0..5, which of (v, q, p, t) feeds R, G and B.
    red = ember.stack((v, q, p, p, t, v), dim=-3)
    green = ember.stack((t, v, v, q, p, p), dim=-3)
    blue = ember.stack((p, p, t, v, v, q), dim=-3)
    return ember.cat([ember.gather(c, -3, sector) for c in (red, green, blue)], dim=-3)


def adjust_hue(img, hue_factor: float):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if not isinstance(img, ember.Tensor):
        raise TypeError("Input img should be Tensor image")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-3] == 1:  # as PIL: a gray image has no hue
        return img
    orig_dtype = img.dtype
    hsv = _rgb2hsv(convert_image_dtype(img, ember.float32))
    h, s, v = hsv.unbind(dim=-3)
    h = (h + hue_factor) % 1.0
    rgb = _hsv2rgb(ember.stack((h, s, v), dim=-3))
    return convert_image_dtype(rgb, orig_dtype)


def adjust_gamma(img, gamma: float, gain: float = 1):
    if not isinstance(img, ember.Tensor):
        raise TypeError("Input img should be a Tensor.")
    _assert_channels(img, [1, 3])
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    dtype = img.dtype
    result = img if _is_float(dtype) else convert_image_dtype(img, ember.float32)
    result = (gain * result.pow(gamma)).clamp(0, 1)
    return convert_image_dtype(result, dtype)


def _parse_pad_padding(padding) -> list[int]:
    """torchvision padding (int, [all], [lr, tb] or [l, t, r, b]) as [left, right, top, bottom]."""
    if isinstance(padding, int):
        return [padding] * 4
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    return [padding[0], padding[2], padding[1], padding[3]]


def _pad_symmetric(img, p):
    """Mirror padding that repeats the edge pixel (numpy's 'symmetric'); negative pads crop."""
    left, right, top, bottom = p
    h, w = img.shape[-2], img.shape[-1]
    img = img[..., max(-top, 0) : h - max(-bottom, 0), max(-left, 0) : w - max(-right, 0)]
    left, right, top, bottom = (max(v, 0) for v in p)
    h, w = img.shape[-2], img.shape[-1]

    def mirror(n, before, after):
        # index k in the padded axis maps to a source index by reflecting across both edges
        idx = ember.arange(-before, n + after)
        period = 2 * n
        idx = idx % period
        return ember.where(idx >= n, period - 1 - idx, idx)

    rows = mirror(h, top, bottom).to(img.device)
    cols = mirror(w, left, right).to(img.device)
    return img.index_select(-2, rows).index_select(-1, cols)


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad the last two dims; modes constant/edge/reflect/symmetric."""
    _assert_image_tensor(img)
    if fill is None:
        fill = 0
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError(
            f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple"
        )
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    p = _parse_pad_padding(list(padding) if isinstance(padding, tuple) else padding)
    if padding_mode == "symmetric":
        return _pad_symmetric(img, p)
    if padding_mode == "constant":
        squeeze = img.ndim < 4
        x = img.unsqueeze(0) if squeeze else img
        out = nnf.pad(x, p, mode="constant", value=float(fill))
        return out.squeeze(0) if squeeze else out
    x, restore = _to_4d(img)
    out = nnf.pad(x, p, mode="replicate" if padding_mode == "edge" else "reflect")
    return restore(out)


def resize(img, size, interpolation: str = "bilinear", antialias: bool | None = True):
    """Resize ``[..., C, H, W]`` to ``size = [h, w]`` with ``ember.nn.functional.interpolate``."""
    _assert_image_tensor(img)
    if interpolation not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")
    antialias = bool(antialias) and interpolation in ("bilinear", "bicubic")
    x, restore = _to_4d(img)
    align = False if interpolation in ("bilinear", "bicubic") else None
    out = nnf.interpolate(x, size=list(size), mode=interpolation, align_corners=align, antialias=antialias)
    if interpolation == "bicubic" and img.dtype == ember.uint8:
        out = out.clamp(0, 255)  # bicubic overshoots
    return restore(out)


def _check_grid_inputs(img, interpolation, fill, coeffs=None, matrix=None) -> None:
    if not isinstance(img, ember.Tensor):
        raise TypeError("Input img should be Tensor")
    _assert_image_tensor(img)
    if matrix is not None and len(matrix) != 6:
        raise ValueError("Argument matrix should have 6 float values")
    if coeffs is not None and len(coeffs) != 8:
        raise ValueError("Argument coeffs should have 8 float values")
    channels = get_dimensions(img)[0]
    if isinstance(fill, (tuple, list)) and len(fill) > 1 and len(fill) != channels:
        raise ValueError(
            "The number of elements in 'fill' cannot broadcast to match the number of "
            f"channels of the image ({len(fill)} != {channels})"
        )
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")


def _apply_grid(img, grid, mode: str, fill):
    """Sample ``img`` at ``grid`` ``[1, oh, ow, 2]``; points outside take ``fill``.

    With a fill, a ones channel is sampled beside the image: where it comes back below 1
    the point fell (partly) outside, and the fill is blended in by that weight.
    """
    x, restore = _to_4d(img, grid.dtype)
    n = x.shape[0]
    if n > 1:
        grid = grid.expand(n, *grid.shape[1:])
    if fill is not None:
        x = ember.cat([x, ember.ones((n, 1, *x.shape[2:]), dtype=x.dtype, device=x.device)], dim=1)
    out = nnf.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        out, weight = out[:, :-1], out[:, -1:]
        values = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ember.tensor(values, dtype=out.dtype, device=out.device).view(1, len(values), 1, 1)
        if mode == "nearest":
            out = ember.where(weight < 0.5, fill_img.expand_as(out), out)
        else:
            out = out * weight + (1.0 - weight) * fill_img
    return restore(out)


def _base_grid(ow: int, oh: int, dtype, device, centered: bool):
    """Homogeneous pixel-center coordinates ``[1, oh*ow, 3]``, origin at the center if asked."""
    x0, y0 = (-ow * 0.5 + 0.5, -oh * 0.5 + 0.5) if centered else (0.5, 0.5)
    xs = ember.linspace(x0, x0 + ow - 1, ow, dtype=dtype, device=device)
    ys = ember.linspace(y0, y0 + oh - 1, oh, dtype=dtype, device=device)
    gy, gx = ember.meshgrid(ys, xs, indexing="ij")
    return ember.stack([gx, gy, ember.ones_like(gx)], dim=-1).reshape(1, oh * ow, 3)


def _affine_grid(theta, w: int, h: int, ow: int, oh: int):
    """Sampling grid in [-1, 1] for the inverse affine ``theta`` ``[1, 2, 3]`` (pixel units)."""
    scale = ember.tensor([0.5 * w, 0.5 * h], dtype=theta.dtype, device=theta.device)
    grid = _base_grid(ow, oh, theta.dtype, theta.device, centered=True).bmm(theta.transpose(1, 2) / scale)
    return grid.view(1, oh, ow, 2)


def affine(img, matrix, interpolation: str = "nearest", fill=None):
    """Warp by the inverse affine ``matrix`` (6 floats, origin at the image center)."""
    _check_grid_inputs(img, interpolation, fill, matrix=matrix)
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    theta = ember.tensor(list(matrix), dtype=dtype, device=img.device).reshape(1, 2, 3)
    h, w = img.shape[-2], img.shape[-1]
    return _apply_grid(img, _affine_grid(theta, w, h, w, h), interpolation, fill)


def _affine_output_size(matrix, w: int, h: int) -> tuple[int, int]:
    """Bounding box (w, h) of the image corners mapped by ``matrix``, as torchvision rounds it."""
    corners = [(-0.5 * w, -0.5 * h), (-0.5 * w, 0.5 * h), (0.5 * w, 0.5 * h), (0.5 * w, -0.5 * h)]
    a, b, c, d, e, f = (float(v) for v in matrix)
    # torchvision computes these in float32; math in float32 keeps the same rounding.
    pts = ember.tensor([[a * x + b * y + c, d * x + e * y + f] for x, y in corners], dtype=ember.float32)
    lo = pts.amin(dim=0) + ember.tensor([w * 0.5, h * 0.5])
    hi = pts.amax(dim=0) + ember.tensor([w * 0.5, h * 0.5])
    tol = 1e-4  # drop float noise before ceil/floor
    cmax = ember.ceil(ember.trunc(hi / tol) * tol)
    cmin = ember.floor(ember.trunc(lo / tol) * tol)
    size = (cmax - cmin).tolist()
    return int(size[0]), int(size[1])


def rotate(img, matrix, interpolation: str = "nearest", expand: bool = False, fill=None):
    _check_grid_inputs(img, interpolation, fill, matrix=matrix)
    w, h = img.shape[-1], img.shape[-2]
    ow, oh = _affine_output_size(matrix, w, h) if expand else (w, h)
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    theta = ember.tensor(list(matrix), dtype=dtype, device=img.device).reshape(1, 2, 3)
    return _apply_grid(img, _affine_grid(theta, w, h, ow, oh), interpolation, fill)


def perspective(img, perspective_coeffs, interpolation: str = "bilinear", fill=None):
    """Warp by the 8 perspective coefficients (a..h: x' = (ax+by+c)/(gx+hy+1), ...)."""
    _check_grid_inputs(img, interpolation, fill, coeffs=perspective_coeffs)
    oh, ow = img.shape[-2], img.shape[-1]
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    a, b, c, d, e, f, g, h = (float(v) for v in perspective_coeffs)
    base = _base_grid(ow, oh, dtype, img.device, centered=False)
    num = ember.tensor([[a, d], [b, e], [c, f]], dtype=dtype, device=img.device)
    scale = ember.tensor([0.5 * ow, 0.5 * oh], dtype=dtype, device=img.device)
    den = ember.tensor([[g], [h], [1.0]], dtype=dtype, device=img.device)
    grid = (base.matmul(num / scale)) / base.matmul(den) - 1.0
    return _apply_grid(img, grid.view(1, oh, ow, 2), interpolation, fill)


def _gaussian_kernel1d(size: int, sigma: float, dtype, device):
    half = (size - 1) * 0.5
    x = ember.linspace(-half, half, size, dtype=dtype, device=device)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def gaussian_blur(img, kernel_size, sigma):
    """Separable Gaussian blur, reflect-padded, ``kernel_size = [kx, ky]``, ``sigma = [sx, sy]``."""
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], dtype, img.device)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], dtype, img.device)
    kernel = ky[:, None] * kx[None, :]
    c = img.shape[-3]
    x, restore = _to_4d(img, dtype)
    x = nnf.pad(x, [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2], mode="reflect")
    out = nnf.conv2d(x, kernel.expand(c, 1, *kernel.shape), groups=c)
    return restore(out)


def invert(img):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    return _max_value(img.dtype) - img


def posterize(img, bits: int):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    return img & -int(2 ** (8 - bits))  # keeps the top `bits` bits


def solarize(img, threshold: float):
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    if threshold > _max_value(img.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    return ember.where(img >= threshold, invert(img), img)


def _smooth(img):
    """PIL's SMOOTH filter (3x3, centre weight 5) on the interior; the border is kept."""
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    kernel = ember.ones((3, 3), dtype=dtype, device=img.device)
    kernel[1, 1] = 5.0
    kernel = kernel / kernel.sum()
    c = img.shape[-3]
    x, restore = _to_4d(img, dtype)
    inner = restore(nnf.conv2d(x, kernel.expand(c, 1, 3, 3), groups=c))
    out = img.clone()
    out[..., 1:-1, 1:-1] = inner
    return out


def adjust_sharpness(img, sharpness_factor: float):
    if sharpness_factor < 0:
        raise ValueError(f"sharpness_factor ({sharpness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _smooth(img), sharpness_factor)


def autocontrast(img):
    """Stretch each channel's [min, max] to the full range (unchanged where min == max)."""
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    _assert_channels(img, [1, 3])
    bound = _max_value(img.dtype)
    dtype = img.dtype if _is_float(img.dtype) else ember.float32
    lo = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    hi = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    flat = hi == lo
    scale = ember.where(flat, ember.ones_like(lo), bound / ember.where(flat, ember.ones_like(lo), hi - lo))
    lo = ember.where(flat, ember.zeros_like(lo), lo)
    return ((img - lo) * scale).clamp(0, bound).to(img.dtype)


def equalize(img):
    """Histogram equalization per channel of a uint8 image (PIL's ImageOps.equalize rule)."""
    _assert_image_tensor(img)
    if not (3 <= img.ndim <= 4):
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(img, [1, 3])
    shape = img.shape
    chans = img.reshape(-1, shape[-2] * shape[-1]).to(ember.int64)  # [B*C, H*W]
    rows = chans.shape[0]
    offsets = (ember.arange(rows, device=img.device) * 256).unsqueeze(1)
    hist = ember.bincount((chans + offsets).reshape(-1), minlength=256 * rows).reshape(rows, 256)
    # PIL's step: pixels outside the top occupied bin, / 255. The top bin is the max value.
    top = chans.amax(dim=1, keepdim=True)
    step = ember.div(shape[-2] * shape[-1] - hist.gather(1, top), 255, rounding_mode="floor")
    safe = ember.where(step == 0, ember.ones_like(step), step)
    lut = ember.div(hist.cumsum(1) + ember.div(step, 2, rounding_mode="floor"), safe, rounding_mode="floor")
    lut = ember.cat([ember.zeros_like(lut[:, :1]), lut[:, :-1]], dim=1).clamp(0, 255)
    out = lut.gather(1, chans)
    out = ember.where(step == 0, chans, out)  # a channel with one level stays as it is
    return out.to(ember.uint8).reshape(shape)


def normalize(tensor, mean, std, inplace: bool = False):
    _assert_image_tensor(tensor)
    if not _is_float(tensor.dtype):
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(
            "Expected tensor to be a tensor image of size (..., C, H, W). "
            f"Got tensor.size() = {tuple(tensor.shape)}"
        )
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


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    img[..., i : i + h, j : j + w] = v
    return img


def _identity_grid(h: int, w: int, dtype, device):
    """grid_sample coordinates of the pixel centers, ``[1, H, W, 2]``."""
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, w, dtype=dtype, device=device)
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, h, dtype=dtype, device=device)
    gy, gx = ember.meshgrid(ys, xs, indexing="ij")
    return ember.stack([gx, gy], dim=-1).unsqueeze(0)


def elastic_transform(img, displacement, interpolation: str = "bilinear", fill=None):
    """Sample ``img`` at the identity grid plus ``displacement`` ``[1, H, W, 2]`` (grid units)."""
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    h, w = img.shape[-2], img.shape[-1]
    displacement = displacement.to(img.device)
    grid = _identity_grid(h, w, displacement.dtype, img.device) + displacement
    return _apply_grid(img, grid, interpolation, fill)


__all__ = [
    "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
    "adjust_sharpness", "affine", "autocontrast", "convert_image_dtype", "crop", "elastic_transform",
    "equalize", "erase", "gaussian_blur", "get_dimensions", "get_image_num_channels", "get_image_size",
    "hflip", "invert", "normalize", "pad", "perspective", "posterize", "resize", "rgb_to_grayscale",
    "rotate", "solarize", "vflip",
]

