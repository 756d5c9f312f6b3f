"""Random number generators: one default Generator per device behind every random op.

Streams need not match torch's bit for bit; seeding, state save/restore and forking
behave as torch's (torch.random, torch.Generator).
"""

from __future__ import annotations

import contextlib
import pickle

import numpy

from ._device import to_device

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "fork_rng", "default_generator"]

_DEFAULT_SEED = 67280421310721  # torch's documented default seed


class Generator:
    """A random stream on one device (torch.Generator): ``ember.Generator(device="cpu")``.

    ``device`` (a string or a device) is where the random ops that take this generator draw
    their values; it starts from torch's documented default seed 67280421310721. On the CPU
    the values come from numpy's PCG64, so a seed gives other numbers than torch's.

    Beside it the generator holds a Philox offset (torch's CUDA generator state: seed and
    offset): counter-based draws take ``(initial_seed(), offset)`` and advance the offset by
    the blocks they use, through ``philox_seed_offset``. Every draw of a cuda generator is
    one (``ember.cuda._philox``), so its seed and offset are its whole state. ``manual_seed``
    and ``seed`` reset the offset to 0; the state saves it."""

    def __init__(self, device="cpu"):
        from .backends import backend_for_device
        self.device = to_device(device)
        self._backend = backend_for_device(self.device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> "Generator":
        """Restart the stream from the int ``seed`` (taken modulo 2**64) and return the
        generator. RuntimeError for a seed outside [-2**63, 2**64)."""
        seed = int(seed)
        if not -0x8000_0000_0000_0000 <= seed <= 0xFFFF_FFFF_FFFF_FFFF:
            raise RuntimeError(f"Overflow when unpacking long long: {seed}")
        self._initial_seed = seed & 0xFFFF_FFFF_FFFF_FFFF
        self.bit_generator = self._backend.new_bit_generator(self._initial_seed, self.philox_seed_offset)
        self._philox_offset = 0
        return self

    def philox_seed_offset(self, increment: int) -> tuple:
        """``(seed, offset)`` for a counter-based draw that uses ``increment`` counter values
        (Philox blocks), and the offset advanced past them, modulo 2**64 (torch's
        ``philox_cuda_state``; its rounding of the increment is not copied). The seed is
        ``initial_seed()``."""
        offset = self._philox_offset
        self._philox_offset = (offset + int(increment)) & 0xFFFF_FFFF_FFFF_FFFF
        return self._initial_seed, offset

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        s = int(numpy.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the stream started from (the last ``manual_seed`` or ``seed``), as an int."""
        return self._initial_seed

    def get_state(self):
        """The generator's state as a uint8 tensor (opaque; pass it back to set_state): the
        seed, numpy's bit generator state on the CPU, and the Philox offset once it moved
        (all a cuda generator's draws depend on)."""
        from . import _dtype as D
        from .ops.creation import tensor
        inner = getattr(self.bit_generator.bit_generator, "state", None)
        parts = (self._initial_seed, inner if isinstance(inner, dict) else None)
        if self._philox_offset:
            parts += (self._philox_offset,)
        blob = pickle.dumps(parts)
        return tensor(list(blob), dtype=D.uint8)

    def set_state(self, state) -> "Generator":
        """Restore a state ``get_state`` returned.

        Raises:
            TypeError: ``state`` is not a uint8 tensor (torch's ByteTensor).
            RuntimeError: it is not contiguous, or does not hold a state of this generator.
        """
        from ._tensor import Tensor
        if not isinstance(state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(state).__name__}")
        if state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        if not state.is_contiguous():
            raise RuntimeError("RNG state must be contiguous")
        try:
            seed, inner, *rest = _safe_loads(bytes(state.cpu().numpy().tobytes()))
            offset = int(rest[0]) if rest else 0
            if len(rest) > 1 or not 0 <= offset <= 0xFFFF_FFFF_FFFF_FFFF:
                raise ValueError("not a generator state")
            if inner is not None:
                self.bit_generator.bit_generator.state = inner
            elif isinstance(getattr(self.bit_generator.bit_generator, "state", None), dict):
                raise ValueError("a state without the bit generator's, for a generator that has one")
        except Exception as e:  # a torch state, or bytes that are none: not this generator's
            raise RuntimeError(f"Expected a state made by this generator's get_state() ({state.numel()} bytes "
                               f"that do not hold one)") from e
        self._initial_seed = seed
        self._philox_offset = offset
        return self


def _safe_loads(blob: bytes):
    class _Plain(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"generator state may not name {module}.{name}")
    return _Plain(__import__("io").BytesIO(blob)).load()


_generators: dict = {}


def default_generator(device=None) -> Generator:
    """The default Generator of ``device`` (cpu when None)."""
    dev = to_device(device) if device is not None else to_device("cpu")
    if dev.type == "cuda" and dev.index is None:  # a bare "cuda": the current device
        from .backends import cuda_index
        dev = to_device(f"cuda:{cuda_index(dev)}")
    key = (dev.type, dev.index or 0)
    gen = _generators.get(key)
    if gen is None:
        gen = _generators[key] = Generator(dev)
    return gen


def manual_seed(seed: int) -> Generator:
    """Seed every device's default generator with the int ``seed`` and return the CPU one
    (torch.manual_seed). RuntimeError for a seed outside [-2**63, 2**64)."""
    for gen in list(_generators.values()):
        gen.manual_seed(seed)
    return default_generator().manual_seed(seed)


def seed() -> int:
    """Seed the CPU default generator from the operating system's entropy, and every other
    default generator with the same seed; returns the seed (torch.seed)."""
    s = default_generator().seed()
    for gen in _generators.values():
        gen.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the CPU default generator started from, as an int (torch.initial_seed)."""
    return default_generator().initial_seed()


def get_rng_state():
    """The CPU default generator's state as a uint8 tensor (opaque: pass it back to
    ``set_rng_state``) (torch.get_rng_state)."""
    return default_generator().get_state()


def set_rng_state(state) -> None:
    """Restore the CPU default generator to ``state``, a uint8 tensor ``get_rng_state``
    returned (torch.set_rng_state). TypeError for another type or dtype, RuntimeError for
    bytes that hold no state of this generator."""
    default_generator().set_state(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True):
    """A context manager that runs its block with the default generators' states restored
    afterwards (torch.random.fork_rng). ``devices`` is accepted: every default generator
    made so far is forked; with ``enabled`` False the block runs without forking."""
    if not enabled:
        yield
        return
    gens = list(_generators.values()) or [default_generator()]
    states = [g.get_state() for g in gens]
    try:
        yield
    finally:
        for g, s in zip(gens, states):
            g.set_state(s)
