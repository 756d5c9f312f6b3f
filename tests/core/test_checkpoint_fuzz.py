"""Hostile checkpoints: each is refused with torch's exception type and a message naming the
file and the reason, runs no code, and allocates no more than the file's size plus a margin.
Safetensors files (read by ember.sharded) get the same treatment.

The random part is bounded: EMBER_FUZZ_SEED (default 0) and EMBER_FUZZ_COUNT (default 1000)
choose the mutations; a longer run by hand is e.g.
``EMBER_FUZZ_COUNT=20000 pytest tests/core/test_checkpoint_fuzz.py -k mutated``.
"""

import collections
import json
import os
import pickle
import random
import struct
import tracemalloc
import zipfile

import pytest
import torch

import ember

_MARGIN = 2 * 2**20  # bytes a load may allocate beyond a small multiple of the file's size


def _state():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    return collections.OrderedDict(w=base, col=base[:, 1], b=torch.ones(3, dtype=torch.bfloat16),
                                   n=torch.arange(4), flags=torch.tensor([True, False]), step=7)


def _records(path) -> list:
    zf = zipfile.ZipFile(path)
    return [(i.filename, zf.read(i.filename)) for i in zf.infolist()]


def _rezip(path, records, compress=zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression=compress) as out:
        for name, data in records:
            out.writestr(name, data)


def _with_pickle(tmp_path, name: str, pkl: bytes):
    """torch's archive of ``_state()`` with ``data.pkl`` replaced by ``pkl``."""
    src = tmp_path / "base_for_pickles.pt"
    if not src.exists():
        torch.save(_state(), src)
    path = tmp_path / name
    _rezip(path, [(n, pkl if n.endswith("/data.pkl") else d) for n, d in _records(src)])
    return path


@pytest.fixture(autouse=True, scope="module")
def _warm(tmp_path_factory):
    """One load of each kind first, so that the imports and caches of a first load are not
    counted against a file."""
    folder = tmp_path_factory.mktemp("warm")
    torch.save(_state(), folder / "w.pt")
    torch.save(_state(), folder / "l.pt", _use_new_zipfile_serialization=False)
    for mmap in (False, True):
        ember.load(folder / "w.pt", mmap=mmap)
    ember.load(folder / "l.pt")
    with pytest.raises(pickle.UnpicklingError):
        ember.load(_with_pickle(folder, "g.pt", _call("os", "system", "true")))


def _load_bounded(path, **kw):
    """ember.load under tracemalloc; (result or exception, peak bytes allocated)."""
    tracemalloc.start()
    try:
        try:
            out = ember.load(path, **kw)
        except Exception as e:  # noqa: BLE001 - the caller judges the type
            out = e
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, peak


def _refused(path, kind, match=None, mmap=False):
    """ember refuses ``path`` with ``kind``, naming the file, within the memory bound."""
    out, peak = _load_bounded(path, mmap=mmap)
    assert isinstance(out, kind), f"{path.name}: {out!r}"
    assert path.name in str(out), str(out)
    if match is not None:
        assert match in str(out), str(out)
    assert peak <= 3 * os.path.getsize(path) + _MARGIN, f"{path.name}: {peak} bytes allocated"
    return out


def _torch_raises(path, kind, **kw):
    with pytest.raises(kind):
        torch.load(path, **kw)


_GLOBAL = b"\x80\x02c%s\n%s\n"


def _call(module: str, name: str, arg: str) -> bytes:
    """A protocol-2 pickle calling module.name(arg)."""
    a = arg.encode()
    return _GLOBAL % (module.encode(), name.encode()) + b"X" + struct.pack("<I", len(a)) + a + b"\x85R."


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("module,name", [("os", "system"), ("posix", "system"), ("builtins", "eval"),
                                         ("builtins", "exec"), ("builtins", "getattr"), ("subprocess", "Popen"),
                                         ("numpy.core.multiarray", "_reconstruct"),
                                         ("numpy._core.multiarray", "_reconstruct"), ("numpy", "frombuffer"),
                                         ("torch.serialization", "load")])
def test_globals_outside_the_allowed_set_run_nothing(tmp_path, module, name):
    sentinel = tmp_path / "ran"
    command = f"open({str(sentinel)!r}, 'w').close()" if name in ("eval", "exec") else f"touch {sentinel}"
    forms = {
        "global": _call(module, name, command),
        # protocol 4's STACK_GLOBAL and protocol 0's INST reach find_class by other opcodes
        "stack_global": (b"\x80\x04\x8c" + bytes([len(module)]) + module.encode() + b"\x8c" + bytes([len(name)])
                         + name.encode() + b"\x93X" + struct.pack("<I", len(command)) + command.encode()
                         + b"\x85R."),
        "inst": b"(X" + struct.pack("<I", len(command)) + command.encode() + b"i%s\n%s\n." % (module.encode(),
                                                                                              name.encode()),
    }
    for form, pkl in forms.items():
        path = _with_pickle(tmp_path, f"{form}.pt", pkl)
        _torch_raises(path, pickle.UnpicklingError, weights_only=True)
        for mmap in (False, True):
            _refused(path, pickle.UnpicklingError, match=f"{module}.{name}", mmap=mmap)
        assert not sentinel.exists()


def test_build_on_anything_but_an_ordered_dict_is_refused(tmp_path):
    path = _with_pickle(tmp_path, "build_dict.pt", b"\x80\x02}}X\x01\x00\x00\x00aK\x01sb.")
    _refused(path, pickle.UnpicklingError, match="BUILD of builtins.dict")
    # a tensor whose slots a crafted BUILD would overwrite
    src = tmp_path / "t.pt"
    ember.save(ember.ones(2), src)
    path = tmp_path / "build_tensor.pt"
    _rezip(path, [(n, d[:-1] + b"}X\x05\x00\x00\x00_dataNsb." if n.endswith("data.pkl") else d)
                  for n, d in _records(src)])
    _refused(path, pickle.UnpicklingError, match="BUILD of ember")
    # state_dict's _metadata goes through BUILD on an OrderedDict, as torch writes it
    lin = torch.nn.Linear(2, 2)
    torch.save(lin.state_dict(), tmp_path / "sd.pt")
    got = ember.load(tmp_path / "sd.pt")
    assert got._metadata == torch.load(tmp_path / "sd.pt")._metadata


def test_deep_and_self_referencing_pickles_load_as_in_torch(tmp_path):
    depth = 100_000
    deep = _with_pickle(tmp_path, "deep.pt", b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b".")
    selfref = _with_pickle(tmp_path, "self.pt", b"\x80\x02]q\x00h\x00a.")
    selfdict = _with_pickle(tmp_path, "selfdict.pt", b"\x80\x02}q\x00X\x01\x00\x00\x00kh\x00s.")
    for mmap in (False, True):
        for lib in (torch, ember):
            out = lib.load(deep, mmap=mmap)
            n = 1
            while out:
                out, n = out[0], n + 1
            assert n == depth
            out = lib.load(selfref, mmap=mmap)
            assert out[0] is out
            out = lib.load(selfdict, mmap=mmap)
            assert out["k"] is out
    # a tensor rebuilt from a list (referenced twice through the memo) instead of a storage
    loop = _with_pickle(tmp_path, "loop.pt", b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n"
                                           b"(]q\x00K\x00K\x01\x85K\x01\x85\x89h\x00tR.")
    _torch_raises(loop, Exception, weights_only=True)
    _refused(loop, RuntimeError)


def _pid_pickle(numel) -> bytes:
    """data.pkl of one float tensor whose storage reference claims ``numel`` elements."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
            b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpu" + pickle.dumps(numel, 2)[2:-1] + b"tQK\x00K\x04\x85K\x01\x85"
            b"\x89ccollections\nOrderedDict\n)RtR.")


def test_storages_of_the_wrong_size(tmp_path):
    good = _with_pickle(tmp_path, "good.pt", _pid_pickle(12))
    assert ember.load(good).tolist() == torch.load(good).tolist() == [0.0, 1.0, 2.0, 3.0]
    for numel, what in ((13, "does not match expected size"), (2**40, "does not match expected size"),
                        (-1, "a count >= 0 expected")):
        path = _with_pickle(tmp_path, f"numel{numel}.pt", _pid_pickle(numel))
        for mmap in (False, True):
            _refused(path, RuntimeError, match=what, mmap=mmap)
        _torch_raises(path, Exception)
    # the tensor runs past its storage
    past = _with_pickle(tmp_path, "past.pt", _pid_pickle(12).replace(b"K\x04\x85", b"K\x0d\x85"))
    _refused(past, RuntimeError, match="does not fit")
    _torch_raises(past, RuntimeError)
    # a shortened and a lengthened record (torch refuses both when reading; mapping, it reads past
    # the short one into the next record's bytes; ember refuses both either way)
    src = tmp_path / "short_src.pt"
    torch.save({"a": torch.arange(10.0)}, src)
    for name, change in (("short", lambda d: d[:8]), ("long", lambda d: d + bytes(8))):
        path = tmp_path / f"{name}.pt"
        _rezip(path, [(n, change(d) if n.endswith("data/0") else d) for n, d in _records(src)])
        _torch_raises(path, RuntimeError)
        for mmap in (False, True):
            _refused(path, RuntimeError, match="record size", mmap=mmap)
    # torch's legacy format claiming a storage larger than the file
    legacy = tmp_path / "legacy.pt"
    torch.save({"a": torch.arange(10.0)}, legacy, _use_new_zipfile_serialization=False)
    raw = bytearray(legacy.read_bytes())
    at = raw.rindex(struct.pack("<q", 10))
    raw[at:at + 8] = struct.pack("<q", 2**40)
    (tmp_path / "legacy_big.pt").write_bytes(bytes(raw))
    _refused(tmp_path / "legacy_big.pt", RuntimeError, match="more than the file")


def test_memory_claims_larger_than_the_file(tmp_path):
    # BYTEARRAY8 allocates its claimed size before reading in the plain pure-Python unpickler
    path = _with_pickle(tmp_path, "bytearray.pt", b"\x80\x05\x96" + struct.pack("<Q", 2**33) + b"ab.")
    _refused(path, pickle.UnpicklingError, match="BYTEARRAY8")
    # the C unpickler sizes its memo by the index a file names
    path = _with_pickle(tmp_path, "memo.pt", b"\x80\x02]r\xf0\xff\xff\x7f.")
    out, peak = _load_bounded(path)
    assert out == [] and peak < _MARGIN
    # a deflated record inflating past the file's size
    src = tmp_path / "bomb_src.pt"
    torch.save({"a": torch.ones(2)}, src)
    bomb = tmp_path / "bomb.pt"
    records = [(n, b"\x80\x02" + b"N0" * (2**22) + b"N." if n.endswith("data.pkl") else d) for n, d in _records(src)]
    _rezip(bomb, records, compress=zipfile.ZIP_DEFLATED)
    assert os.path.getsize(bomb) < 2**20
    _refused(bomb, RuntimeError, match="more than the file")
    # a stored record whose header claims a larger compressed size (zipfile reads that much at once)
    raw = bytearray(src.read_bytes())
    info = zipfile.ZipFile(src).getinfo("bomb_src/byteorder")
    # its central directory entry: the signature, 42 bytes of fields, then the name
    entry = raw.index(b"PK\x01\x02")
    while raw[entry + 46:entry + 46 + len(info.filename)] != info.filename.encode():
        entry = raw.index(b"PK\x01\x02", entry + 4)
    raw[entry + 20:entry + 24] = struct.pack("<I", 2**23)
    (tmp_path / "claims.pt").write_bytes(bytes(raw))
    _refused(tmp_path / "claims.pt", RuntimeError, match="declares 8388608 bytes")
    # decoders other than torch's (stored, deflated) size their buffers from the file
    _rezip(tmp_path / "lzma.pt", _records(src), compress=zipfile.ZIP_LZMA)
    _refused(tmp_path / "lzma.pt", RuntimeError, match="compression method 14")


@pytest.mark.parametrize("prefix", ["../evil/", "/abs/", "a/../../", "C:/x/", "..\\evil/"])
def test_member_paths_escaping_the_archive(tmp_path, prefix):
    src = tmp_path / "src.pt"
    torch.save(_state(), src)
    path = tmp_path / "escape.pt"
    _rezip(path, [(prefix + n.split("/", 1)[1], d) for n, d in _records(src)])
    # torch refuses some of these only because a record it looks for is missing; ember names the path
    _refused(path, RuntimeError, match="escapes the archive")


def test_truncated_files(tmp_path):
    for writer in ("torch", "ember", "legacy"):
        src = tmp_path / f"{writer}.pt"
        if writer == "torch":
            torch.save(_state(), src)
        elif writer == "ember":
            ember.save({k: ember.from_numpy(v.float().numpy()) if isinstance(v, torch.Tensor) else v
                        for k, v in _state().items()}, src)
        else:
            torch.save(_state(), src, _use_new_zipfile_serialization=False)
        raw = src.read_bytes()
        for cut in (1, 4, 30, len(raw) // 3, len(raw) // 2, len(raw) - 22, len(raw) - 1):
            path = tmp_path / f"{writer}_cut{cut}.pt"
            path.write_bytes(raw[:cut])
            _torch_raises(path, Exception)  # torch's type varies with the cut (IndexError, EOFError, ...)
            _refused(path, RuntimeError, mmap=writer != "legacy")


def _mutate(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        b = b[:rng.randrange(len(b))]
    elif kind == 2:
        at = rng.randrange(len(b))
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif kind == 3:
        at = rng.randrange(len(b))
        n = rng.randint(1, 16)
        b[at:at + n] = bytes(rng.randrange(256) for _ in range(n))
    else:
        at, n = rng.randrange(len(b)), rng.randint(1, 64)
        b[at:at] = b[at:at + n] * rng.randint(1, 4)
    return bytes(b)


def test_fuzz_mutated_checkpoints(tmp_path):
    seed = int(os.environ.get("EMBER_FUZZ_SEED", "0"))
    count = int(os.environ.get("EMBER_FUZZ_COUNT", "1000"))
    rng = random.Random(seed)
    torch.save(_state(), tmp_path / "torch.pt")
    ember.save({k: ember.from_numpy(v.float().numpy()) if isinstance(v, torch.Tensor) else v
                for k, v in _state().items()}, tmp_path / "ember.pt")
    torch.save(_state(), tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    bases = {name: (tmp_path / f"{name}.pt").read_bytes() for name in ("torch", "ember", "legacy")}
    pickles = {name: _records(tmp_path / f"{name}.pt") for name in ("torch", "ember")}
    outcomes = collections.Counter()
    for i in range(count):
        name = rng.choice(["torch", "ember", "legacy"])
        path = tmp_path / f"case{i}.pt"
        if name != "legacy" and rng.random() < 0.5:
            # the pickle mutated inside a well-formed archive, so that the unpickler sees it
            records = [(n, _mutate(rng, d) if n.endswith("data.pkl") else d) for n, d in pickles[name]]
            _rezip(path, records)
        else:
            path.write_bytes(_mutate(rng, bases[name]))
        out, peak = _load_bounded(path, mmap=name != "legacy" and i % 2 == 1)
        assert not isinstance(out, Exception) or isinstance(out, (RuntimeError, pickle.UnpicklingError)), \
            f"case {i} (seed {seed}): {type(out).__name__}: {out}"
        if isinstance(out, Exception):
            assert path.name in str(out), f"case {i} (seed {seed}): the message does not name the file: {out}"
        assert peak <= 3 * os.path.getsize(path) + _MARGIN, f"case {i} (seed {seed}): {peak} bytes allocated"
        outcomes[type(out).__name__] += 1
        path.unlink()
    # the mutations reach both the refusals and the loads that survive them
    assert outcomes["RuntimeError"] > 0 and sum(outcomes.values()) == count


def _safetensors_file(tmp_path):
    from safetensors.torch import save_file
    path = tmp_path / "base.safetensors"
    save_file({k: v.contiguous() for k, v in _state().items() if isinstance(v, torch.Tensor)}, path)
    return path


def _with_header(tmp_path, name, header, data=b"\0" * 64, length=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + data)
    return path


@pytest.mark.parametrize("mmap", [False, True])
def test_hostile_safetensors_files(tmp_path, mmap):
    from ember.sharded import load_weights_file
    f32 = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}
    cases = {
        "short": (b"\x01\x02", "too short"),
        "length": (struct.pack("<Q", 2**60) + b"{}", "the header claims"),
        "json": (_with_header(tmp_path, "j", b"{not json"), "not JSON"),
        "deep": (_with_header(tmp_path, "d", b"[" * 100_000 + b"]" * 100_000), "not JSON"),
        "list": (_with_header(tmp_path, "l", [1, 2]), "an object expected"),
        "dtype": (_with_header(tmp_path, "t", {"a": {**f32, "dtype": "F128"}}), "has dtype"),
        "dtype_list": (_with_header(tmp_path, "tl", {"a": {**f32, "dtype": ["F32"]}}), "has dtype"),
        "past": (_with_header(tmp_path, "p", {"a": {**f32, "data_offsets": [0, 1 << 40]}}), "data_offsets"),
        "reversed": (_with_header(tmp_path, "r", {"a": {**f32, "data_offsets": [16, 0]}}), "data_offsets"),
        "size": (_with_header(tmp_path, "s", {"a": {**f32, "shape": [5]}}), "needs 20 bytes"),
        "shape": (_with_header(tmp_path, "n", {"a": {**f32, "shape": [-4]}}), "has shape"),
        "entry": (_with_header(tmp_path, "e", {"a": 3}), "an object expected"),
    }
    for name, (content, reason) in cases.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(content if isinstance(content, bytes) else content.read_bytes())
        tracemalloc.start()
        try:
            with pytest.raises(RuntimeError, match=reason) as info:
                load_weights_file(path, mmap=mmap)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert path.name in str(info.value)
        assert peak <= 3 * os.path.getsize(path) + _MARGIN, f"{name}: {peak} bytes"
    good = _with_header(tmp_path, "good.safetensors", {"__metadata__": {"format": "pt"}, "a": f32})
    assert load_weights_file(good, mmap=mmap)["a"].tolist() == [0.0] * 4


def test_fuzz_mutated_safetensors(tmp_path):
    from ember.sharded import load_weights_file
    seed = int(os.environ.get("EMBER_FUZZ_SEED", "0"))
    count = int(os.environ.get("EMBER_FUZZ_COUNT", "1000"))
    rng = random.Random(seed + 1)
    raw = _safetensors_file(tmp_path).read_bytes()
    outcomes = collections.Counter()
    for i in range(count):
        path = tmp_path / f"case{i}.safetensors"
        path.write_bytes(_mutate(rng, raw))
        tracemalloc.start()
        try:
            try:
                load_weights_file(path, mmap=i % 2 == 1)
                out = None
            except Exception as e:  # noqa: BLE001 - judged below
                out = e
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert out is None or isinstance(out, RuntimeError), f"case {i} (seed {seed}): {type(out).__name__}: {out}"
        assert out is None or path.name in str(out), f"case {i} (seed {seed}): {out}"
        assert peak <= 3 * os.path.getsize(path) + _MARGIN, f"case {i} (seed {seed}): {peak} bytes allocated"
        outcomes[type(out).__name__] += 1
        path.unlink()
    assert outcomes["RuntimeError"] > 0 and outcomes["NoneType"] > 0


def test_flipped_bytes_in_data_pkl_or_storages(tmp_path):
    src = tmp_path / "src.pt"
    torch.save({"a": torch.zeros(64)}, src)
    raw = src.read_bytes()
    zf = zipfile.ZipFile(src)
    for record in ("src/data.pkl", "src/data/0"):
        info = zf.getinfo(record)
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        at = info.header_offset + 30 + name_len + extra_len + 20
        bad = bytearray(raw)
        bad[at] ^= 0x40
        path = tmp_path / f"flip_{record.rsplit('/', 1)[1]}.pt"
        path.write_bytes(bytes(bad))
        if record.endswith("data.pkl"):
            # zipfile checks the pickle's CRC (torch fails later, on what the flip made of it)
            _torch_raises(path, Exception)
            for mmap in (False, True):
                _refused(path, RuntimeError, match="Bad CRC-32", mmap=mmap)
        else:
            # a storage's bytes are data: torch checks no CRC there, and neither does a mapping
            for mmap in (False, True):
                assert ember.load(path, mmap=mmap)["a"].tolist() == torch.load(path, mmap=mmap)["a"].tolist()
                assert ember.load(path, mmap=mmap)["a"].tolist() != [0.0] * 64
