"""ember.load(f, mmap=True) against torch.load(f, mmap=True), and the 64-byte record alignment
that lets either library map the other's files."""

import collections
import io
import mmap
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember


def _values():
    """A state dict of several dtypes made by torch: a view tied to its base, 0-d, empty."""
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 5, generator=g)
    out = collections.OrderedDict()
    out["w"] = base
    out["rows"] = base[2:]
    out["col"] = base[:, 1]
    out["bf16"] = torch.randn(7, generator=g).to(torch.bfloat16)
    out["f64"] = torch.randn(3, 3, generator=g, dtype=torch.float64)
    out["i64"] = torch.arange(9).reshape(3, 3)
    out["u8"] = torch.arange(11, dtype=torch.uint8)
    out["mask"] = torch.randn(5, generator=g) > 0
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.zeros(0, 4)
    return out


def _ember_values():
    return {k: ember.from_numpy(v.float().numpy()).to(ember.bfloat16) if v.dtype == torch.bfloat16
            else ember.from_numpy(v.numpy()) for k, v in _values().items()}


def _ember_tied(src):
    out = dict(src)
    out["rows"] = out["w"][2:]
    out["col"] = out["w"][:, 1]
    return out


def _write(writer: str, path):
    if writer == "torch":
        torch.save(_values(), path)
    else:
        ember.save(_ember_tied(_ember_values()), path)


def _mapped_ranges(path) -> list:
    """(start, end) of this process's mappings of ``path``, from /proc/self/maps."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


def _in_mapping(ptr: int, ranges: list) -> bool:
    return any(lo <= ptr < hi for lo, hi in ranges)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("writer", ["torch", "ember"])
def test_mmap_tensors_are_views_of_the_file(tmp_path, writer):
    path = tmp_path / "sd.pt"
    _write(writer, path)
    t = torch.load(path, mmap=True, weights_only=True)
    e = ember.load(path, mmap=True, weights_only=True)
    assert list(e) == list(t)
    ranges = _mapped_ranges(path)
    assert ranges, "the file is not mapped"
    for k in t:
        assert_same(e[k], t[k], rtol=0, atol=0)
        if t[k].numel():
            # both libraries' tensors point into a mapping of the file
            assert _in_mapping(t[k].data_ptr(), ranges)
            assert _in_mapping(e[k].data_ptr(), ranges), k
    # views saved together still share the mapped storage, at torch's offsets
    assert e["rows"].data_ptr() - e["w"].data_ptr() == t["rows"].data_ptr() - t["w"].data_ptr()
    assert e["col"].data_ptr() - e["w"].data_ptr() == t["col"].data_ptr() - t["w"].data_ptr()
    assert e["col"].stride() == t["col"].stride()


def test_resident_memory_stays_flat_until_touched(tmp_path):
    path = tmp_path / "big.pt"
    nbytes = 64 * 2**20
    torch.save({"x": torch.ones(nbytes // 4)}, path)
    before = _rss()
    sd = ember.load(path, mmap=True)
    after_load = _rss()
    assert after_load - before < 8 * 2**20, f"mapping grew resident memory by {after_load - before} bytes"
    assert sd["x"].sum().item() == nbytes // 4  # reads every page
    assert _rss() - before > nbytes // 2
    assert _in_mapping(sd["x"].data_ptr(), _mapped_ranges(path))
    # without mmap the storage is read into memory of its own
    assert not _in_mapping(ember.load(path)["x"].data_ptr(), _mapped_ranges(path))


@pytest.mark.parametrize("flags", ["private", "shared"])
def test_writes_follow_the_mmap_options_as_in_torch(tmp_path, flags):
    results = {}
    for name, lib in (("torch", torch), ("ember", ember)):
        path = tmp_path / f"{name}.pt"
        torch.save({"a": torch.zeros(4)}, path)
        opts = lib.serialization.set_default_mmap_options(mmap.MAP_PRIVATE if flags == "private" else mmap.MAP_SHARED)
        with opts:
            assert lib.serialization.get_default_mmap_options() == (mmap.MAP_PRIVATE if flags == "private"
                                                                    else mmap.MAP_SHARED)
            sd = lib.load(path, mmap=True)
            sd["a"].add_(1)
            seen_in_memory = sd["a"].tolist()
            del sd
        assert lib.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
        results[name] = (seen_in_memory, torch.load(path)["a"].tolist())
    assert results["ember"] == results["torch"]
    with pytest.raises(ValueError, match="MAP_PRIVATE or mmap.MAP_SHARED"):
        ember.serialization.set_default_mmap_options(12345)


def test_map_location_and_weights_only_with_mmap(tmp_path):
    path = tmp_path / "sd.pt"
    torch.save(_values(), path)
    expected = torch.load(path, mmap=True, map_location="cpu")
    for ml in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage, None):
        got = ember.load(path, mmap=True, map_location=ml, weights_only=True)
        for k in expected:
            assert_same(got[k], expected[k], rtol=0, atol=0)
        assert _in_mapping(got["w"].data_ptr(), _mapped_ranges(path))
    seen = []
    ember.load(path, mmap=True, map_location=lambda s, loc: seen.append(loc))
    assert seen and set(seen) == {"cpu"}

    bad = tmp_path / "custom.pt"
    torch.save({"c": Custom(3), "n": collections.Counter("abb"), "t": torch.ones(2)}, bad)
    with pytest.raises(pickle.UnpicklingError, match="Custom"):
        torch.load(bad, mmap=True, weights_only=True)
    with pytest.raises(pickle.UnpicklingError, match=r"Custom.*custom\.pt"):
        ember.load(bad, mmap=True, weights_only=True)
    got = ember.load(bad, mmap=True, weights_only=False)
    assert got["c"].x == 3 and got["n"] == collections.Counter("abb")
    # Counter is one of torch's allowed globals
    torch.save({"n": collections.Counter("abb")}, bad)
    assert ember.load(bad, mmap=True)["n"] == torch.load(bad, mmap=True)["n"]


class Custom:
    def __init__(self, x):
        self.x = x


def test_mmap_refusals_match_torch(tmp_path):
    path = tmp_path / "sd.pt"
    torch.save({"a": torch.ones(3)}, path)
    for lib in (torch, ember):
        with open(path, "rb") as f:
            with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
                lib.load(io.BytesIO(f.read()), mmap=True)
    old = tmp_path / "old.pt"
    torch.save({"a": torch.ones(3)}, old, _use_new_zipfile_serialization=False)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
            lib.load(old, mmap=True)
    # a path-like works as well as a str
    assert ember.load(os.fspath(path), mmap=True)["a"].tolist() == [1.0] * 3


def _data_records(path) -> list:
    """(name after the archive folder, offset of the record's first byte) for every record."""
    raw = path.read_bytes()
    out = []
    for info in zipfile.ZipFile(path).infolist():
        h = info.header_offset
        name_len, extra_len = struct.unpack("<HH", raw[h + 26:h + 30])
        out.append((info.filename.split("/", 1)[1], h + 30 + name_len + extra_len))
    return out


def test_save_aligns_records_as_torch(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "e").mkdir()
    torch.save(_values(), tmp_path / "t" / "sd.pt")
    ember.save(_ember_tied(_ember_values()), tmp_path / "e" / "sd.pt")
    theirs, ours = _data_records(tmp_path / "t" / "sd.pt"), _data_records(tmp_path / "e" / "sd.pt")
    assert [n for n, _ in ours] == [n for n, _ in theirs]
    for records in (theirs, ours):
        assert all(offset % 64 == 0 for _, offset in records)
    # each library maps the other's file
    t = torch.load(tmp_path / "e" / "sd.pt", mmap=True, weights_only=True)
    e = ember.load(tmp_path / "t" / "sd.pt", mmap=True, weights_only=True)
    for k in t:
        assert_same(e[k], t[k], rtol=0, atol=0)


def test_big_endian_records_are_swapped_when_mapped(tmp_path):
    # torch writes little-endian only: rewrite its archive as a big-endian machine would
    src = tmp_path / "le.pt"
    torch.save({"a": torch.arange(5, dtype=torch.float64), "b": torch.arange(4, dtype=torch.int16)}, src)
    zf = zipfile.ZipFile(src)
    loaded = torch.load(src)
    dtypes = {}
    for i, v in enumerate(loaded.values()):
        dtypes[f"le/data/{i}"] = v.numpy().dtype
    dst = tmp_path / "be.pt"
    with zipfile.ZipFile(dst, "w") as out:
        for info in zf.infolist():
            data = zf.read(info.filename)
            if info.filename.endswith("byteorder"):
                data = b"big"
            elif info.filename in dtypes:
                data = np.frombuffer(data, dtype=dtypes[info.filename]).byteswap().tobytes()
            out.writestr(info.filename, data)
    for mm in (False, True):
        got = ember.load(dst, mmap=mm)
        for k, v in loaded.items():
            assert_same(got[k], v, rtol=0, atol=0)
