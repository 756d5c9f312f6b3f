"""ember_vision.io: pillow round trips, libpng's documented conversions derived by hand, and
torchvision's decoded pixels stored in fixtures/io.npz (made by fixtures/make_fixtures.py)."""

import io
import os

import numpy as np
import pytest
from PIL import Image

import ember
from ember_vision.io import (
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

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "io.npz")
MODES = ["UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA"]
RNG = np.random.default_rng(0)
RGBA = RNG.integers(0, 256, (6, 9, 4), dtype=np.uint8)


def _bytes_tensor(data: bytes):
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def _pil_bytes(img, fmt, **options):
    buf = io.BytesIO()
    img.save(buf, format=fmt, **options)
    return buf.getvalue()


def _chw(arr):
    arr = arr[:, :, None] if arr.ndim == 2 else arr
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def _hwc(t):
    return t.numpy().transpose(1, 2, 0)


def _png(mode):
    """A PNG of pillow ``mode`` made from RGBA, and the stored pixels [H, W, C]."""
    if mode == "P":
        img = Image.fromarray(RGBA[..., :3]).quantize(colors=7)
        img.info.pop("transparency", None)
    elif mode == "PT":  # palette with a transparent entry (tRNS)
        img = Image.fromarray(RGBA[..., :3]).quantize(colors=7)
        img.info["transparency"] = 2
    elif mode == "1":
        img = Image.fromarray(RGBA[..., 0] > 127)
    else:
        img = Image.fromarray(RGBA).convert(mode)
    options = {"transparency": 2} if mode == "PT" else {}
    return _pil_bytes(img, "PNG", **options), img


def _libpng_gray(rgb):
    # libpng's rgb_to_gray(0.2989, 0.587): 15-bit weights 9794, 19234 and 3740, truncated
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((9794 * r + 19234 * g + 3740 * b) >> 15).astype(np.uint8)


def _expected_png(img, mode):
    """torchvision's documented result for a PNG, derived with numpy."""
    if mode == "UNCHANGED":
        arr = np.array(img.convert("L") if img.mode == "1" else img)
        return arr[:, :, None] if arr.ndim == 2 else arr
    if img.mode == "P":
        arr = np.array(img.convert("RGBA"))  # palette entries and their tRNS alpha
    else:
        arr = np.array(img.convert("L") if img.mode == "1" else img)
        arr = arr[:, :, None] if arr.ndim == 2 else arr
    color = arr[..., :3] if arr.shape[2] >= 3 else arr[..., :1]
    alpha = arr[..., 3:] if arr.shape[2] >= 3 else arr[..., 1:]
    if not alpha.shape[2]:
        alpha = np.full(arr.shape[:2] + (1,), 255, np.uint8)
    gray = _libpng_gray(color)[..., None] if color.shape[2] == 3 else color
    rgb = color if color.shape[2] == 3 else np.repeat(color, 3, axis=2)
    return {"GRAY": gray, "GRAY_ALPHA": np.concatenate([gray, alpha], 2), "RGB": rgb,
            "RGB_ALPHA": np.concatenate([rgb, alpha], 2)}[mode]


# ---- files ----------------------------------------------------------------------------

def test_read_write_file_round_trip(tmp_path):
    payload = RNG.integers(0, 256, 1000, dtype=np.uint8)
    write_file(str(tmp_path / "a.bin"), ember.from_numpy(payload.copy()))
    assert (tmp_path / "a.bin").read_bytes() == payload.tobytes()
    got = read_file(tmp_path / "a.bin")
    assert got.dtype is ember.uint8 and tuple(got.shape) == (1000,)
    np.testing.assert_array_equal(got.numpy(), payload)


@pytest.mark.parametrize("data", [ember.zeros(4), ember.zeros(2, 2, dtype=ember.uint8)])
def test_write_file_rejects(tmp_path, data):
    with pytest.raises(RuntimeError):
        write_file(str(tmp_path / "a.bin"), data)


def test_read_file_missing_or_empty(tmp_path):
    with pytest.raises(RuntimeError, match="No such file"):
        read_file(str(tmp_path / "missing.png"))
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(RuntimeError, match="non empty"):
        read_file(str(tmp_path / "empty"))


# ---- PNG ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pil_mode", ["L", "LA", "RGB", "RGBA", "P", "PT", "1"])
def test_decode_png_modes(pil_mode, mode):
    data, img = _png(pil_mode)
    out = decode_png(_bytes_tensor(data), ImageReadMode[mode])
    expected = _expected_png(img, mode)
    assert out.dtype is ember.uint8 and tuple(out.shape) == expected.transpose(2, 0, 1).shape
    np.testing.assert_array_equal(_hwc(out), expected)
    np.testing.assert_array_equal(decode_image(_bytes_tensor(data), mode.lower()).numpy(), out.numpy())


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("level", [0, 6, 9])
def test_encode_png_round_trip(channels, level):
    arr = RGBA[..., :channels]
    encoded = encode_png(_chw(arr), compression_level=level)
    assert encoded.dtype is ember.uint8 and encoded.ndim == 1
    np.testing.assert_array_equal(_hwc(decode_png(encoded)), arr)
    pil = np.array(Image.open(io.BytesIO(encoded.numpy().tobytes())))
    np.testing.assert_array_equal(pil.reshape(arr.shape), arr)


def test_png_compression_level_changes_size():
    smooth = np.tile(np.arange(64, dtype=np.uint8), (64, 1))[None]
    sizes = [encode_png(ember.from_numpy(smooth.copy()), level).numel() for level in (0, 9)]
    assert sizes[0] > sizes[1]


def test_output_is_a_chw_view_of_hwc_memory():
    out = decode_png(_bytes_tensor(_png("RGB")[0]))
    assert out.stride() == (1, 9 * 3, 3)


def test_16_bit_png_refused():
    data = _pil_bytes(Image.fromarray(np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000), "PNG")
    with pytest.raises(RuntimeError, match="16-bit"):
        decode_png(_bytes_tensor(data))


# ---- JPEG -----------------------------------------------------------------------------

@pytest.mark.parametrize("channels", [1, 3])
def test_encode_jpeg_decodes_like_pillow(channels):
    arr = np.ascontiguousarray(np.repeat(np.repeat(RGBA[..., :channels], 4, 0), 4, 1))  # smooth-ish 24x36
    encoded = encode_jpeg(_chw(arr), quality=95)
    pil = np.array(Image.open(io.BytesIO(encoded.numpy().tobytes())))
    decoded = decode_jpeg(encoded)
    np.testing.assert_array_equal(_hwc(decoded), pil.reshape(arr.shape))
    assert np.abs(pil.reshape(arr.shape).astype(int) - arr).mean() < 30


def test_jpeg_quality_orders_error_and_size():
    arr = np.ascontiguousarray(np.repeat(np.repeat(RGBA[..., :3], 4, 0), 4, 1))
    errs, sizes = [], []
    for q in (10, 50, 95):
        enc = encode_jpeg(_chw(arr), quality=q)
        sizes.append(enc.numel())
        errs.append(np.abs(_hwc(decode_jpeg(enc)).astype(int) - arr).mean())
    assert sizes == sorted(sizes) and errs == sorted(errs, reverse=True)


def test_decode_jpeg_modes():
    arr = np.ascontiguousarray(np.repeat(np.repeat(RGBA[..., :3], 4, 0), 4, 1))
    enc = _pil_bytes(Image.fromarray(arr), "JPEG", quality=90)
    rgb = _hwc(decode_jpeg(_bytes_tensor(enc), ImageReadMode.RGB)).astype(int)
    gray = _hwc(decode_jpeg(_bytes_tensor(enc), "GRAY")).astype(int)
    assert gray.shape == arr.shape[:2] + (1,)
    # the luma plane: ITU-R 601 weights of the decoded colour, up to the decoder's rounding
    luma = rgb @ np.array([0.299, 0.587, 0.114])
    assert np.abs(gray[..., 0] - luma).max() <= 3
    gray_file = _pil_bytes(Image.fromarray(arr[..., 0]), "JPEG", quality=90)
    as_rgb = _hwc(decode_jpeg(_bytes_tensor(gray_file), "RGB"))
    np.testing.assert_array_equal(as_rgb, np.repeat(_hwc(decode_jpeg(_bytes_tensor(gray_file))), 3, axis=2))
    for bad in ("GRAY_ALPHA", "RGB_ALPHA"):
        with pytest.raises(RuntimeError, match="not supported"):
            decode_jpeg(_bytes_tensor(enc), bad)


def test_jpeg_lists():
    images = [_chw(RGBA[..., :3]), _chw(RGBA[..., :1])]
    encoded = encode_jpeg(images, quality=80)
    assert isinstance(encoded, list) and len(encoded) == 2
    decoded = decode_jpeg(encoded)
    assert [tuple(d.shape) for d in decoded] == [(3, 6, 9), (1, 6, 9)]
    with pytest.raises(ValueError):
        encode_jpeg([])
    with pytest.raises(ValueError):
        decode_jpeg([])
    with pytest.raises(ValueError):
        decode_jpeg([encoded[0], "x"])


@pytest.mark.parametrize("quality", [0, 101])
def test_jpeg_quality_bounds(quality):
    with pytest.raises(ValueError, match="between 1 and 100"):
        encode_jpeg(_chw(RGBA[..., :3]), quality=quality)


# ---- EXIF, GIF, WEBP, files -----------------------------------------------------------

@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_exif_orientation(fmt):
    arr = np.ascontiguousarray(np.repeat(np.repeat(RGBA[:4, :6, :3], 8, 0), 8, 1))  # 32x48
    exif = Image.Exif()
    exif[0x0112] = 6  # the stored image must be turned 90 degrees clockwise to display
    data = _bytes_tensor(_pil_bytes(Image.fromarray(arr), fmt, exif=exif, **({"quality": 95} if fmt == "JPEG" else {})))
    plain = _hwc(decode_image(data))
    turned = _hwc(decode_image(data, apply_exif_orientation=True))
    np.testing.assert_array_equal(turned, np.rot90(plain, k=-1))


def test_gif_frames():
    frames = [Image.fromarray(np.full((4, 5, 3), c, np.uint8)) for c in ((255, 0, 0), (0, 0, 255))]
    data = _bytes_tensor(_pil_bytes(frames[0], "GIF", save_all=True, append_images=frames[1:]))
    out = decode_image(data)
    assert tuple(out.shape) == (2, 3, 4, 5)
    np.testing.assert_array_equal(out.numpy()[:, :, 0, 0], [[255, 0, 0], [0, 0, 255]])
    single = decode_gif(_bytes_tensor(_pil_bytes(frames[0], "GIF")))
    assert tuple(single.shape) == (3, 4, 5)


@pytest.mark.parametrize("alpha", [False, True])
def test_webp_lossless(alpha):
    arr = RGBA if alpha else RGBA[..., :3]
    data = _bytes_tensor(_pil_bytes(Image.fromarray(np.ascontiguousarray(arr)), "WEBP", lossless=True, exact=True))
    np.testing.assert_array_equal(_hwc(decode_image(data)), arr)
    assert decode_webp(data, "RGB_ALPHA").shape[0] == 4 and decode_webp(data, "RGB").shape[0] == 3
    with pytest.raises(RuntimeError):
        decode_webp(data, "GRAY")


def test_write_png_jpeg_and_read_image(tmp_path):
    img = _chw(RGBA[..., :3])
    write_png(img, str(tmp_path / "a.png"))
    np.testing.assert_array_equal(read_image(str(tmp_path / "a.png")).numpy(), img.numpy())
    np.testing.assert_array_equal(decode_image(tmp_path / "a.png", ImageReadMode.GRAY).numpy()[0],
                                  _libpng_gray(RGBA[..., :3]))
    write_jpeg(img, str(tmp_path / "a.jpg"), quality=90)
    assert (tmp_path / "a.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert tuple(read_image(tmp_path / "a.jpg").shape) == (3, 6, 9)


def test_mode_names():
    assert ImageReadMode.RGBA is ImageReadMode.RGB_ALPHA
    data = _bytes_tensor(_png("RGB")[0])
    assert decode_image(data, "rgba").shape[0] == 4
    with pytest.raises(KeyError):
        decode_image(data, "CMY")


# ---- bad input ------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [decode_png, decode_jpeg, decode_image])
@pytest.mark.parametrize("data", [ember.zeros(10), ember.zeros(2, 5, dtype=ember.uint8),
                                  ember.zeros(0, dtype=ember.uint8)])
def test_decode_rejects_bad_tensors(fn, data):
    with pytest.raises(RuntimeError):
        fn(data)


def test_decode_rejects_wrong_format():
    jpeg = encode_jpeg(_chw(RGBA[..., :3]))
    with pytest.raises(RuntimeError, match="not png"):
        decode_png(jpeg)
    with pytest.raises(RuntimeError, match="Unsupported image file"):
        decode_image(_bytes_tensor(b"BM" + bytes(40)))
    with pytest.raises(RuntimeError):
        decode_jpeg(_bytes_tensor(b"\xff\xd8\xff" + bytes(20)))


@pytest.mark.parametrize("fn", [encode_png, encode_jpeg])
@pytest.mark.parametrize("image", [ember.zeros(3, 4, 4), ember.zeros(4, 4, dtype=ember.uint8),
                                   ember.zeros(2, 4, 4, dtype=ember.uint8), ember.zeros(4, 4, 4, dtype=ember.uint8)])
def test_encode_rejects_bad_images(fn, image):
    with pytest.raises(RuntimeError):
        fn(image)


@pytest.mark.parametrize("level", [-1, 10])
def test_png_compression_bounds(level):
    with pytest.raises(RuntimeError, match="between 0 and 9"):
        encode_png(_chw(RGBA[..., :3]), level)


# ---- torchvision's pixels (fixtures/io.npz) -------------------------------------------

@pytest.fixture(scope="module")
def tv():
    with np.load(FIXTURES) as f:
        return {k: f[k] for k in f.files}


def _torchvision_defect(name, mode):
    # palette indices packed 2 per byte (4-bit file), and alpha 1 added to a 1-bit gray file
    return (name, mode) in {("PT", "UNCHANGED"), ("1", "GRAY_ALPHA"), ("1", "RGB_ALPHA")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["L", "LA", "RGB", "RGBA", "PT", "1"])
def test_decode_png_matches_torchvision(tv, name, mode):
    got = decode_png(ember.from_numpy(tv[f"png_{name}"].copy()), mode).numpy()
    expected = tv[f"png_{name}_{mode}"]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if not _torchvision_defect(name, mode):
        np.testing.assert_array_equal(got, expected)
    elif name == "PT":
        assert got.max() < 7  # the palette's indices
    else:
        np.testing.assert_array_equal(got[-1], 255)
        np.testing.assert_array_equal(expected[-1], 1)


@pytest.mark.parametrize("mode", ["UNCHANGED", "GRAY", "RGB"])
@pytest.mark.parametrize("name", ["rgb", "gray"])
def test_decode_jpeg_matches_torchvision(tv, name, mode):
    got = decode_jpeg(ember.from_numpy(tv[f"jpeg_{name}"].copy()), mode).numpy()
    np.testing.assert_array_equal(got, tv[f"jpeg_{name}_{mode}"])


@pytest.mark.parametrize("quality", [25, 75, 95])
def test_encode_jpeg_matches_torchvision_bytes(tv, quality):
    # pillow and torchvision drive the same libjpeg settings: the files are identical
    got = encode_jpeg(ember.from_numpy(tv["encode_input"].copy()), quality=quality).numpy()
    np.testing.assert_array_equal(got, tv[f"encode_jpeg_q{quality}"])


def test_decode_torchvision_png(tv):
    np.testing.assert_array_equal(decode_png(ember.from_numpy(tv["encode_png"].copy())).numpy(), tv["encode_input"])
