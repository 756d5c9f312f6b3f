"""ember.save / ember.load: PyTorch's checkpoint formats.

``save`` writes the zip archive torch writes: ``<name>/data.pkl`` (a protocol-2 pickle of
plain containers in which every tensor is ``torch._utils._rebuild_tensor_v2`` applied to a
persistent storage reference ``('storage', torch.<Type>Storage, key, location, numel)``),
the raw little-endian bytes of each storage in ``<name>/data/<key>`` (aligned to 64
bytes), ``byteorder``, ``version``, ``.format_version``, ``.storage_alignment`` and
``.data/serialization_id``.  ``torch.load(f, weights_only=True)`` opens it, and
``load`` opens what ``torch.save`` writes, including the older non-zip format
(``_use_new_zipfile_serialization=False``).

``load(f, mmap=True)`` maps the file instead of reading it (the 64-byte alignment of
the records lets torch and ember map each other's files).  Hostile files are refused
with torch's exception types and a message naming the file and the reason, without
running code or allocating more than the file's size.

Tensors that share memory are written once and share memory again after loading
(tied weights stay tied).  Loading uses a restricted unpickler: tensors, numbers,
strings, bytes, ``None``, dicts, ``OrderedDict``, ``Counter``, lists, tuples, sets, dtypes, devices
and ``Size``; any other global raises ``pickle.UnpicklingError`` naming it.

Source: https://pytorch.org/docs/stable/generated/torch.save.html,
https://pytorch.org/docs/stable/generated/torch.load.html,
https://pytorch.org/docs/stable/notes/serialization.html
"""

from __future__ import annotations

import collections
import io
import mmap as _mmap
import os
import pickle
import secrets
import stat
import struct
import sys
import zipfile

import numpy

from . import _dtype as D
from ._device import device as _device
from ._tensor import Size, Tensor, _make

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_default_mmap_options", "set_default_mmap_options"]

_ALIGN = 64
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_DTYPE_OF_STORAGE = {v: D._dtype_by_name(k) for k, v in _STORAGE_NAMES.items()}
# torch's dtype globals (torch.float32, torch.long...) -> ember dtypes
_TORCH_DTYPES = {d.name: d for d in D.ALL}
_TORCH_DTYPES.update(D._ALIASES)
_TORCH_DTYPES["bool"] = D.bool_


# ---- saving ---------------------------------------------------------------------------

class _Global:
    """A ``module.name`` global written into the pickle without importing ``module``."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.module}.{self.name} is a name written into checkpoints, not a function")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_ORDERED_DICT = collections.OrderedDict
_STORAGE_GLOBALS = {k: _Global("torch", v) for k, v in _STORAGE_NAMES.items()}
_DTYPE_GLOBALS = {d.name: _Global("torch", d.name) for d in D.ALL}
_SIZE_GLOBAL = _Global("torch", "Size")
_DEVICE_GLOBAL = _Global("torch", "device")


class _StorageRef:
    """One storage to write: a flat host-or-device array of ``dtype`` and its location."""

    __slots__ = ("key", "flat", "dtype", "location")

    def __init__(self, key: str, flat, dtype: D.dtype, location: str):
        self.key, self.flat, self.dtype, self.location = key, flat, dtype, location


def _root_array(arr):
    """The array that owns ``arr``'s memory (numpy and cupy keep it in ``.base``)."""
    kind = type(arr)
    while True:
        b = arr.base
        if not isinstance(b, kind):
            b = getattr(b, "base", None)  # numpy's as_strided wraps the base in a helper object
            if not isinstance(b, kind):
                return arr
        arr = b


def _address(arr) -> int:
    return arr.__array_interface__["data"][0] if isinstance(arr, numpy.ndarray) else arr.data.ptr


class _Writer:
    """Collects the storages of the tensors pickled, one per shared memory block."""

    def __init__(self):
        self.storages: dict = {}   # (id(root), dtype name) -> _StorageRef
        self.keep: list = []       # keeps roots alive so ids stay unique while saving

    def storage_of(self, t: Tensor):
        """(storage ref, offset, stride) of ``t`` in elements; a compact copy when ``t``'s
        memory cannot be described as torch's (negative strides, odd alignment)."""
        arr, dt = t._data, t.dtype
        item = dt.itemsize
        location = str(t.device)
        root = _root_array(arr)
        flat = None
        if root.flags.c_contiguous or root.flags.f_contiguous:
            flat = root.reshape(-1, order="A") if root.ndim != 1 else root
            if flat.dtype != arr.dtype:
                flat = flat.view(arr.dtype) if flat.nbytes % item == 0 else None
        if flat is not None and arr.size:
            delta = _address(arr) - _address(root)
            strides = arr.strides
            if delta % item or delta < 0 or any(s < 0 or s % item for s in strides):
                flat = None
            else:
                offset = delta // item
                stride = tuple(s // item if n != 1 else _contig(arr.shape)[i]
                               for i, (s, n) in enumerate(zip(strides, arr.shape)))
        if flat is None or not arr.size:
            flat = arr.reshape(-1).copy() if arr.size else arr.reshape(-1)
            root, offset, stride = flat, 0, _contig(arr.shape)
        key = (id(root), dt.name)
        ref = self.storages.get(key)
        if ref is None:
            ref = self.storages[key] = _StorageRef(str(len(self.storages)), flat, dt, location)
            self.keep.append(root)
        return ref, offset, stride


def _contig(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


class _Pickler(pickle._Pickler):
    """Protocol-2 pickler writing ember tensors, dtypes, devices and Size as torch's globals."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, writer: _Writer, legacy: bool = False):
        super().__init__(file, protocol)
        self._writer = writer
        self._legacy = legacy

    def _save_marker(self, obj: _Global) -> None:
        if self.memo.get(id(obj)) is not None:
            self.write(self.get(self.memo[id(obj)][0]))
            return
        self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch[_Global] = _save_marker

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            pid = ("storage", _STORAGE_GLOBALS[obj.dtype.name], obj.key, obj.location, int(obj.flat.size))
            return pid + (None,) if self._legacy else pid
        return None

    def _save_dtype(self, obj: D.dtype) -> None:
        self._save_marker(_DTYPE_GLOBALS[obj.name])

    dispatch[D.dtype] = _save_dtype

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return _reduce_tensor(self._writer, obj)
        if type(obj) is _device:
            return _DEVICE_GLOBAL, (str(obj),)
        if type(obj) is Size:
            return _SIZE_GLOBAL, (tuple(obj),)
        return NotImplemented

    def save_global(self, obj, name=None):
        if type(obj) is _Global:
            return self._save_marker(obj)
        return super().save_global(obj, name)


def _reduce_tensor(writer: _Writer, t: Tensor):
    if t._requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    ref, offset, stride = writer.storage_of(t)
    args = (ref, offset, tuple(t._data.shape), stride, bool(t._requires_grad), collections.OrderedDict())
    if type(t) is not Tensor and type(t).__name__ == "Parameter":
        inner = (_REBUILD_TENSOR, (ref, offset, tuple(t._data.shape), stride, False, collections.OrderedDict()))
        return _REBUILD_PARAMETER, (_Prebuilt(inner), bool(t._requires_grad), collections.OrderedDict())
    return _REBUILD_TENSOR, args


class _Prebuilt:
    """A (callable, args) pair pickled as that REDUCE (the tensor inside a Parameter)."""

    __slots__ = ("rv",)

    def __init__(self, rv):
        self.rv = rv

    def __reduce__(self):
        return self.rv


def _storage_bytes(ref: _StorageRef) -> bytes:
    flat = ref.flat
    if not isinstance(flat, numpy.ndarray):
        from .backends import backend_of_array
        flat = backend_of_array(flat).to_host(flat)
    flat = numpy.ascontiguousarray(flat)
    if flat.dtype.byteorder == ">" or (flat.dtype.byteorder == "=" and sys.byteorder == "big"):
        flat = flat.byteswap().view(flat.dtype.newbyteorder("<"))
    return flat.tobytes()


def _archive_name(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        stem = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        return stem or "archive"
    return "archive"


def _write_zip(obj, stream, name: str, protocol: int) -> None:
    writer = _Writer()
    buf = io.BytesIO()
    _Pickler(buf, protocol, writer).dump(obj)
    records = [("data.pkl", buf.getvalue()), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]
    records += [(f"data/{ref.key}", ref) for ref in writer.storages.values()]
    records += [("version", b"3\n"), (".data/serialization_id", _serialization_id())]
    with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for rel, data in records:
            if isinstance(data, _StorageRef):
                data = _storage_bytes(data)
            filename = f"{name}/{rel}"
            info = zipfile.ZipInfo(filename, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 0
            start = zf.fp.tell() + 30 + len(filename.encode("utf-8"))
            if len(data) > zipfile.ZIP64_LIMIT:
                start += 20  # zip64 extra added by zipfile
            pad = (-(start + 4)) % _ALIGN
            info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
            zf.writestr(info, data)


def _serialization_id() -> bytes:
    return str(secrets.randbits(128)).zfill(40).encode()


def _write_legacy(obj, stream, protocol: int) -> None:
    writer = _Writer()
    pickle.dump(_LEGACY_MAGIC, stream, protocol=protocol)
    pickle.dump(_LEGACY_PROTOCOL, stream, protocol=protocol)
    pickle.dump({"protocol_version": _LEGACY_PROTOCOL, "little_endian": True,
                 "type_sizes": {"short": 2, "int": 4, "long": 4}}, stream, protocol=protocol)
    _Pickler(stream, protocol, writer, legacy=True).dump(obj)
    refs = list(writer.storages.values())
    pickle.dump([r.key for r in refs], stream, protocol=protocol)
    for ref in refs:
        stream.write(struct.pack("<q", int(ref.flat.size)))
        stream.write(_storage_bytes(ref))


def _write_path_atomically(path: str, write) -> None:
    """Run ``write(stream)`` into a new file beside ``path``, then rename it over ``path``.

    A symlink is written through (its target is replaced); a new file gets the mode
    ``open()`` would give it (0o666 less the umask), an existing one keeps its mode; a path
    that is not a regular file (a device, a FIFO) is written in place, as torch does."""
    path = os.path.realpath(path)
    try:
        existing = os.stat(path).st_mode
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing):
        with open(path, "wb") as stream:
            write(stream)
        return
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(8)}.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, "wb") as stream:
            write(stream)
        if existing is not None:
            os.chmod(tmp, stat.S_IMODE(existing))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(obj, f, pickle_module=None, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (tensors inside plain containers, e.g. a ``state_dict()``) to ``f``.

    Args:
        obj: any picklable object; tensors are written as torch writes them.
        f: a path (str or os.PathLike) or a writable binary file-like object.
        pickle_module: None or the standard ``pickle`` module (another raises ValueError).
        pickle_protocol: the pickle protocol of ``data.pkl`` (torch's default, 2).
        _use_new_zipfile_serialization: False writes torch's older non-zip format.

    A path is written to a temporary file in the same directory, then renamed over
    ``f``: an error leaves no half-written file. As with torch's plain ``open``, a symlink
    is written through, a new file's mode follows the umask and an existing file keeps its
    mode. Raises RuntimeError for a non-leaf tensor that requires grad (torch's error), and
    whatever pickling raises for objects that cannot be pickled.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save supports only the standard pickle module")

    def write(stream):
        if _use_new_zipfile_serialization:
            _write_zip(obj, stream, _archive_name(f), pickle_protocol)
        else:
            _write_legacy(obj, stream, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        _write_path_atomically(os.fspath(f), write)
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a 'write' attribute, "
                             f"got {type(f).__name__}")
    buf = io.BytesIO()
    write(buf)
    f.write(buf.getvalue())
    if hasattr(f, "flush"):
        f.flush()


# ---- loading --------------------------------------------------------------------------

_safe_globals: dict = {}
_MAP_PRIVATE = getattr(_mmap, "MAP_PRIVATE", 2)
_MAP_SHARED = getattr(_mmap, "MAP_SHARED", 1)
_mmap_flags = [_MAP_PRIVATE]


def get_default_mmap_options() -> int:
    """The flags ``load(..., mmap=True)`` maps files with: ``mmap.MAP_PRIVATE`` (the
    default; writes to loaded tensors stay in memory) or ``mmap.MAP_SHARED`` (writes reach
    the file). Source: torch.serialization.get_default_mmap_options."""
    return _mmap_flags[0]


class set_default_mmap_options:
    """Set the flags of ``load(..., mmap=True)``, as a call or within a ``with`` block.

    ``flags`` is ``mmap.MAP_PRIVATE`` or ``mmap.MAP_SHARED``; another value raises ValueError
    (torch.serialization.set_default_mmap_options)."""

    def __init__(self, flags: int):
        if flags not in (_MAP_PRIVATE, _MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected mmap.MAP_PRIVATE or "
                             f"mmap.MAP_SHARED, but got {flags}")
        self.prev = _mmap_flags[0]
        _mmap_flags[0] = flags

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _mmap_flags[0] = self.prev
        return False


def add_safe_globals(safe_globals) -> None:
    """Allow the classes and functions of the list ``safe_globals`` (or ``(obj, "module.name")``
    pairs) in ``load``'s restricted unpickler, from now on (torch.serialization.add_safe_globals)."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, qual = g
        else:
            obj, qual = g, f"{g.__module__}.{g.__qualname__}"
        _safe_globals[qual] = obj


def get_safe_globals() -> list:
    """The objects ``add_safe_globals`` allowed, as a list (torch.serialization.get_safe_globals)."""
    return list(_safe_globals.values())


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed (torch.serialization.clear_safe_globals)."""
    _safe_globals.clear()


class safe_globals:
    """Allow the globals of the list ``safe_globals`` (as in ``add_safe_globals``) in ``load``
    within the ``with`` block only (torch.serialization.safe_globals)."""

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = dict(_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _safe_globals.clear()
        _safe_globals.update(self._saved)
        return False


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0").lower() in ("1", "y", "yes", "true")


class _Refused(pickle.UnpicklingError):
    pass


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    """A tensor viewing ``storage`` (a 1-D ember tensor) at ``storage_offset`` with ``size``/``stride``."""
    return _view_of_storage(storage, storage_offset, tuple(size), tuple(stride), bool(requires_grad))


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _view_of_storage(storage, storage_offset, tuple(size), tuple(stride), False)


def _view_of_storage(storage: Tensor, offset: int, size: tuple, stride: tuple, requires_grad: bool) -> Tensor:
    from .ops._helpers import be
    arr = storage._data
    item = arr.itemsize
    numel = 1
    for n in size:
        numel *= n
    if numel:
        needed = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if offset < 0 or any(s < 0 for s in stride) or needed > arr.size:
            raise RuntimeError(f"tensor of size {list(size)} and stride {list(stride)} at offset {offset} does not "
                               f"fit in a storage of {arr.size} elements (corrupt checkpoint?)")
        view = be(storage).xp.lib.stride_tricks.as_strided(arr[offset:], shape=size,
                                                           strides=tuple(s * item for s in stride))
    else:
        view = arr[:0].reshape(size)
    t = _make(view, storage.dtype)
    if requires_grad:
        t.requires_grad = True
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    try:
        from .nn.parameter import Parameter
    except ImportError:
        data._requires_grad = bool(requires_grad)
        return data
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    return p


def _set_builder(items=()):
    return set(items)


def _frozenset_builder(items=()):
    return frozenset(items)


def _codecs_encode(text, encoding="latin1"):
    import codecs
    return codecs.encode(text, encoding)


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "Counter"): collections.Counter,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch", "Size"): Size,
    ("torch", "device"): _device,
    ("builtins", "set"): set, ("__builtin__", "set"): set,
    ("builtins", "frozenset"): frozenset, ("__builtin__", "frozenset"): frozenset,
    ("builtins", "complex"): complex, ("__builtin__", "complex"): complex,
    ("builtins", "slice"): slice, ("__builtin__", "slice"): slice,
    ("builtins", "bytearray"): bytearray, ("__builtin__", "bytearray"): bytearray,
    ("_codecs", "encode"): _codecs_encode,
}


class _StorageType:
    """What a ``torch.<Type>Storage`` global unpickles to: the storage's dtype."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: D.dtype):
        self.dtype = dtype


def _find_global(module: str, name: str, weights_only: bool):
    if module == "torch":
        if name in _DTYPE_OF_STORAGE:
            return _StorageType(_DTYPE_OF_STORAGE[name])
        if name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        if name == "UntypedStorage":
            return _StorageType(D.uint8)
    hit = _ALLOWED.get((module, name))
    if hit is not None:
        return hit
    qual = f"{module}.{name}"
    if qual in _safe_globals:
        return _safe_globals[qual]
    if not weights_only:
        return _PLAIN.find_class(module, name)
    raise _Refused(
        f"Weights only load failed: unsupported global: GLOBAL {qual} was not an allowed global by default. "
        f"ember.load rebuilds tensors, numbers, strings and plain containers only; if you trust this file, "
        f"allow it with ember.serialization.add_safe_globals([{name}]) or load with weights_only=False.")


class _PlainUnpickler(pickle.Unpickler):
    pass


_PLAIN = _PlainUnpickler(io.BytesIO(b""))


class _Loader:
    """Turns persistent storage references into 1-D ember tensors on the target device."""

    def __init__(self, read_storage, map_location, legacy: bool):
        self.read_storage = read_storage   # (key, dtype, numel) -> host 1-D numpy array
        self.map_location = map_location
        self.legacy = legacy
        self.cache: dict = {}

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id in checkpoint: {pid!r}")
        if len(pid) < 5:
            raise pickle.UnpicklingError(f"storage reference {pid!r} has {len(pid)} fields, 5 expected")
        stype, key, location, numel = pid[1], str(pid[2]), pid[3], pid[4]
        if type(numel) is not int or numel < 0:
            raise RuntimeError(f"storage {key} claims {numel!r} elements, a count >= 0 expected")
        view_meta = pid[5] if len(pid) > 5 else None
        dtype = stype.dtype if isinstance(stype, _StorageType) else None
        if dtype is None:
            raise pickle.UnpicklingError(f"unsupported storage type in checkpoint: {stype!r}")
        storage = self.cache.get(key)
        if storage is None:
            host = self.read_storage(key, dtype, numel)
            storage = self.cache[key] = self._place(_make(host, dtype), str(location))
        if view_meta is not None:
            _, view_offset, view_size = view_meta
            return _make(storage._data[view_offset:view_offset + view_size], dtype)
        return storage

    def _place(self, storage: Tensor, location: str) -> Tensor:
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _device)):
            out = ml(storage, location)
            if out is not None:
                return out
            target = location
        elif ml is None:
            target = location
        elif isinstance(ml, dict):
            target = ml.get(location, location)
        else:
            target = ml
        dev = _device(target) if not isinstance(target, _device) else target
        if dev.type == "cpu":
            return storage
        try:
            return storage.to(dev)
        except (RuntimeError, ImportError) as e:
            raise RuntimeError(
                f"Attempting to deserialize object on a CUDA device but CUDA is not available to ember ({e}). "
                "If you are running on a CPU-only machine, please use ember.load with "
                "map_location=ember.device('cpu') to map your storages to the CPU.") from None


class _RestrictedUnpickler(pickle._Unpickler):
    """The pure-Python unpickler, as torch's weights-only one: its memo is a dict (the C
    unpickler sizes an array by the largest memo index a file names, so a crafted index
    allocates gigabytes), and BUILD sets state only on ``OrderedDict`` (``state_dict``'s
    ``_metadata``) and on instances of globals the caller allowed."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_build(self):
        inst = self.stack[-2] if len(self.stack) > 1 else None
        allowed = tuple(g for g in _safe_globals.values() if isinstance(g, type))
        if type(inst) is collections.OrderedDict:
            state = self.stack.pop()
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise pickle.UnpicklingError(f"Weights only load failed: BUILD of OrderedDict with state of type "
                                             f"{type(state).__name__}, a dict of attribute names expected")
            inst.__dict__.update(state)
            return
        if allowed and isinstance(inst, allowed):
            return pickle._Unpickler.load_build(self)
        raise pickle.UnpicklingError(f"Weights only load failed: BUILD of {type(inst).__module__}."
                                     f"{type(inst).__qualname__} is not allowed (OrderedDict or an allowed global "
                                     "expected)")

    dispatch[pickle.BUILD[0]] = load_build

    def load_bytearray8(self):
        # the pure-Python unpickler allocates (and zero-fills) the claimed size before reading
        (n,) = struct.unpack("<Q", self.read(8))
        if n > self.limit:
            raise pickle.UnpicklingError(f"Weights only load failed: BYTEARRAY8 claims {n} bytes, more than the "
                                         f"file's {self.limit}")
        data = self.read(n)
        if len(data) != n:
            raise pickle.UnpicklingError("pickle data was truncated")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = load_bytearray8


class _Bounded:
    """A file read no further than ``end``: the unpickler's ``read(n)`` takes ``n`` from the
    file, and a buffered file allocates ``n`` bytes before reading."""

    def __init__(self, raw, end: int):
        self.raw, self.end = raw, end

    def read(self, n=-1):
        left = max(self.end - self.raw.tell(), 0)
        return self.raw.read(left if n is None or n < 0 or n > left else n)

    def readline(self, size=-1):
        return self.raw.readline(size)

    def seek(self, pos, whence=0):
        return self.raw.seek(pos, whence)

    def tell(self):
        return self.raw.tell()


def _make_unpickler(stream, loader: _Loader, weights_only: bool, limit: int = 1 << 62):
    base = _RestrictedUnpickler if weights_only else pickle.Unpickler

    class Unpickler(base):
        def find_class(self, module, name):
            return _find_global(module, name, weights_only)

        def persistent_load(self, pid):
            return loader.persistent_load(pid)
    out = Unpickler(stream, encoding="utf-8")
    out.limit = limit
    return out


def _host_array(raw: bytes, dtype: D.dtype, numel: int, big_endian: bool, where: str):
    need = numel * dtype.itemsize
    if len(raw) != need:
        raise RuntimeError(f"record size of {where} ({len(raw)} bytes) does not match expected size ({need} bytes = "
                           f"{numel} elements * {dtype.itemsize} bytes/element) for dtype {dtype.name}")
    np_dtype = dtype.np
    arr = numpy.frombuffer(raw, dtype=np_dtype.newbyteorder(">") if big_endian and dtype.itemsize > 1 else np_dtype,
                           count=numel)
    if big_endian and dtype.itemsize > 1:
        arr = arr.byteswap().view(np_dtype)
    else:
        arr = arr.copy()
    return arr


def _check_members(zf: zipfile.ZipFile, limit: int) -> None:
    """Refuse member names that escape the archive's folder, records whose declared sizes
    are larger than the file (zipfile allocates what a header declares; a compressed record
    cannot inflate past the file's size) and compression methods other than torch's."""
    for info in zf.infolist():
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or "\x00" in name or (len(name) > 1 and name[1] == ":"):
            raise RuntimeError(f"archive member {name!r} has a path that escapes the archive's folder")
        if max(info.file_size, info.compress_size) > limit:
            raise RuntimeError(f"archive member {name!r} declares {max(info.file_size, info.compress_size)} bytes, "
                               f"more than the file's {limit} bytes")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # as torch's reader; other methods' decoders size their buffers from the file
            raise RuntimeError(f"archive member {name!r} uses compression method {info.compress_type}; stored or "
                               "deflated expected")


def _record_offset(zf: zipfile.ZipFile, read_at, end: int, name: str) -> tuple:
    """(offset of a stored record's bytes in the file, their length), from its local header;
    ``read_at(offset, n)`` reads the file, ``end`` is its length."""
    info = zf.getinfo(name)
    h = info.header_offset
    header = read_at(h, 30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise RuntimeError(f"record {name} has no local header at offset {h}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    start = h + 30 + name_len + extra_len
    if start + info.file_size > end:
        raise RuntimeError(f"record {name} runs past the end of the file ({start + info.file_size} > {end} bytes)")
    return start, info.file_size


def _check_record_size(name: str, size: int, dtype: D.dtype, numel: int) -> int:
    need = numel * dtype.itemsize
    if size != need:
        raise RuntimeError(f"record size of {name} ({size} bytes) does not match expected size ({need} bytes = "
                           f"{numel} elements * {dtype.itemsize} bytes/element) for dtype {dtype.name}")
    return need


def _mapped_array(mapped, zf, name: str, dtype: D.dtype, numel: int, big_endian: bool):
    if zf.getinfo(name).compress_type != zipfile.ZIP_STORED:
        raise RuntimeError(f"record {name} is compressed; mmap needs stored records, as torch.save writes them")
    start, size = _record_offset(zf, lambda o, n: mapped[o:o + n], len(mapped), name)
    need = _check_record_size(name, size, dtype, numel)
    if big_endian and dtype.itemsize > 1:
        return _host_array(mapped[start:start + need], dtype, numel, True, name)
    return numpy.frombuffer(mapped, dtype=dtype.np, count=numel, offset=start)


def _read_array(stream, zf, name: str, dtype: D.dtype, numel: int, big_endian: bool):
    """A stored record read straight into its array: one copy and no CRC pass over the
    data (torch checks none either; only ``data.pkl``'s CRC is checked, by zipfile)."""
    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED or not hasattr(stream, "readinto"):
        return _host_array(zf.read(name), dtype, numel, big_endian, name)

    def read_at(offset, n):
        stream.seek(offset)
        return stream.read(n)
    end = stream.seek(0, os.SEEK_END)
    start, size = _record_offset(zf, read_at, end, name)
    need = _check_record_size(name, size, dtype, numel)
    arr = numpy.empty(numel, dtype=dtype.np)
    stream.seek(start)
    view, got = arr.view(numpy.uint8), 0
    while got < need:
        n = stream.readinto(view[got:])
        if not n:
            raise RuntimeError(f"record {name} ends after {got} of its {need} bytes (truncated checkpoint?)")
        got += n
    if big_endian and dtype.itemsize > 1:
        arr = arr.byteswap()
    return arr


def _load_zip(stream, map_location, weights_only: bool, limit: int, mapped=None):
    zf = zipfile.ZipFile(stream)
    _check_members(zf, limit)
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError("archive holds no '<name>/data.pkl' record")
    prefix = pkl[0][: -len("data.pkl")]
    big_endian = False
    if prefix + "byteorder" in names:
        order = zf.read(prefix + "byteorder").decode().strip()
        if order not in ("little", "big"):
            raise RuntimeError(f"unknown byteorder record {order!r}")
        big_endian = order == "big"

    def read_storage(key, dtype, numel):
        if mapped is not None:
            return _mapped_array(mapped, zf, f"{prefix}data/{key}", dtype, numel, big_endian)
        return _read_array(stream, zf, f"{prefix}data/{key}", dtype, numel, big_endian)

    loader = _Loader(read_storage, map_location, legacy=False)
    with zf.open(pkl[0]) as fp:
        data = fp.read()
    return _make_unpickler(io.BytesIO(data), loader, weights_only, len(data)).load()


def _load_legacy(stream, map_location, weights_only: bool, limit: int):
    stream = _Bounded(stream, stream.tell() + limit)

    def plain_load():
        return _make_unpickler(stream, _Loader(None, None, True), True, limit).load()

    magic = plain_load()
    if magic != _LEGACY_MAGIC:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = plain_load()
    if protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    sys_info = plain_load()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True

    # The storages follow the object pickle: a first pass over it (on empty storages)
    # finds their dtypes, then they are read and the object pickle is loaded again.
    body = stream.tell()
    seen: dict = {}

    def note_storage(key, dtype, numel):
        if numel * dtype.itemsize > limit:
            raise RuntimeError(f"storage {key} claims {numel} elements of {dtype.name}, more than the file's "
                               f"{limit} bytes hold")
        seen[key] = (dtype, numel)
        return numpy.empty(numel, dtype=dtype.np)

    _make_unpickler(stream, _Loader(note_storage, "cpu", True), weights_only, limit).load()
    keys = plain_load()
    arrays: dict = {}
    for key in keys:
        key = str(key)
        header = stream.read(8)
        if len(header) < 8:
            raise RuntimeError(f"storage {key} is missing (truncated checkpoint?)")
        (numel,) = struct.unpack("<q" if little else ">q", header)
        if key not in seen:
            raise RuntimeError(f"storage {key} was not referenced by the checkpoint")
        dtype = seen[key][0]
        if numel < 0 or numel * dtype.itemsize > limit:
            raise RuntimeError(f"storage {key} claims {numel} elements of {dtype.name}, more than the file's "
                               f"{limit} bytes hold")
        raw = stream.read(numel * dtype.itemsize)
        arrays[key] = _host_array(raw, dtype, numel, not little, f"storage {key}")
    end = stream.tell()
    stream.seek(body)
    missing = set(seen) - set(arrays)
    if missing:
        raise RuntimeError(f"storages {sorted(missing)} are missing (truncated checkpoint?)")
    result = _make_unpickler(stream, _Loader(lambda key, dtype, numel: arrays[key], map_location, True),
                             weights_only, limit).load()
    stream.seek(end)
    return result


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip or legacy format).

    Args:
        f: a path or a readable, seekable binary file-like object.
        map_location: None (each storage to the device it was saved from), a device or
            string (all storages there), a dict mapping saved locations to new ones, or
            a callable ``fn(storage, location)`` returning a tensor or None.
        pickle_module: None or the standard ``pickle`` module (another raises ValueError).
        weights_only: True or None (torch's default since 2.6): the restricted unpickler;
            False also allows other globals (only for files you trust). As in torch,
            TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 forces True, and TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1
            makes an omitted weights_only False (with a warning).
        mmap: map the file instead of reading its storages: the tensors are views of the
            mapping (copy-on-write; see ``set_default_mmap_options``), read from disk when
            first touched. Needs a path to a zip checkpoint whose records are stored
            uncompressed (what ``save`` and ``torch.save`` write); ``map_location`` moving
            storages off the CPU copies them as usual.

    Returns: the saved object; tensors that shared memory when saved share it again.

    Raises:
        pickle.UnpicklingError: the file names a global or a BUILD the restricted unpickler
            refuses (the message names the file and the global).
        RuntimeError: the file is truncated or corrupt, a member path escapes the archive,
            a storage is smaller than its tensors need or claims more bytes than the file
            holds (the message names the file and the reason); ``mmap`` on torch's legacy
            format; a storage saved on CUDA and CUDA is unavailable without map_location.
        ValueError: ``mmap=True`` with a file-like object instead of a path.
        FileNotFoundError: ``f`` is a path that does not exist.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.load supports only the standard pickle module")
    # torch 2.13's switches: the first takes effect only when weights_only is not passed
    if _env_flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD"):
        weights_only = True
    elif weights_only is None and _env_flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        import warnings
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.", stacklevel=2)
        weights_only = False
    restricted = weights_only is not False
    if isinstance(f, (str, os.PathLike)):
        label = repr(os.fspath(f))
        with open(f, "rb") as stream:
            mapped = _map_file(stream, label) if mmap else None
            return _load_stream(stream, map_location, restricted, label, mapped)
    label = repr(getattr(f, "name", f"<{type(f).__name__}>"))
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with 'read' and 'seek', "
                             f"got {type(f).__name__}")
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    return _load_stream(f, map_location, restricted, label)


def _map_file(stream, label: str):
    """The whole file mapped (copy-on-write by default, as torch's MAP_PRIVATE: writes to
    the tensors stay in this process), or None for an empty file (refused later)."""
    size = os.fstat(stream.fileno()).st_size
    if not size:
        return None
    if _mmap_flags[0] == _MAP_SHARED:
        with open(stream.name, "r+b") as rw:
            return _mmap.mmap(rw.fileno(), 0, access=_mmap.ACCESS_WRITE)
    return _mmap.mmap(stream.fileno(), 0, access=_mmap.ACCESS_COPY)


def _load_stream(stream, map_location, restricted: bool, label: str, mapped=None):
    start = stream.tell()
    head = stream.read(4)
    limit = stream.seek(0, os.SEEK_END) - start
    stream.seek(start)
    if not head:
        raise RuntimeError(f"failed to load {label}: the file is empty")
    is_zip = head == b"PK\x03\x04" or head == b"PK\x05\x06"
    if mapped is not None and not is_zip:
        raise RuntimeError(f"mmap can only be used with files saved with `torch.save({label}, "
                           "_use_new_zipfile_serialization=True), please torch.save your checkpoint with this "
                           "option in order to use mmap.")
    try:
        if is_zip:
            return _load_zip(stream, map_location, restricted, limit, mapped)
        return _load_legacy(stream, map_location, restricted, limit)
    except _Refused as e:
        raise _Refused(f"{e} (in {label})") from None
    except pickle.UnpicklingError as e:
        if restricted and str(e).startswith("Weights only load failed"):
            raise pickle.UnpicklingError(f"{e} (in {label})") from None
        raise RuntimeError(f"failed to load {label}: UnpicklingError: {e} (truncated or corrupt checkpoint?)") \
            from e
    except (zipfile.BadZipFile, EOFError, KeyError, struct.error, ValueError, IndexError, TypeError,
            AttributeError, RuntimeError, OSError, OverflowError, MemoryError, _zlib_error()) as e:
        if isinstance(e, FileNotFoundError):
            raise
        if type(e) is RuntimeError:  # ember's own checks already say what was wrong
            raise RuntimeError(f"failed to load {label}: {e}") from e
        raise RuntimeError(f"failed to load {label}: {type(e).__name__}: {e} (truncated or corrupt checkpoint?)") \
            from e


def _zlib_error():
    import zlib
    return zlib.error
