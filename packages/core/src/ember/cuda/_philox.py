"""The draws of a cuda Generator: counter-based, from Philox4x32-10 (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC 2011), as torch's CUDA generator.

Each draw asks its Generator for the Philox blocks it uses (``philox_seed_offset``: the seed
and the offset of the first block, the offset then moved past them) and computes its values
from that seed and offset alone. The Generator's seed and offset are therefore its whole
state: ``get_rng_state``/``set_rng_state`` replay every draw after them, and activation
checkpointing replays the random ops of the recomputed block. The dropout kernels take their
blocks from the same offset, so no two draws share one.

``PhiloxDraws`` has the methods of numpy's ``Generator`` that ember's random ops call. Its
engine turns ``(seed, offset, n)`` into values: ``CurandPhilox`` on the GPU (cuRAND's host
API), ``NumpyPhilox`` on the host (numpy's Philox keyed by the seed, at counters of the
offset's own), which also serves the samplers whose parameters are arrays (poisson,
binomial, standard_gamma, choice) on the GPU: their ops compute on the host around them.
"""

from __future__ import annotations

import math

import numpy

__all__ = ["PhiloxDraws", "CurandPhilox", "NumpyPhilox"]

_MASK64 = 0xFFFF_FFFF_FFFF_FFFF


def _shape(size) -> tuple:
    if size is None:
        return ()
    return (int(size),) if isinstance(size, (int, numpy.integer)) else tuple(int(s) for s in size)


class NumpyPhilox:
    """numpy's Philox4x64 keyed by ``seed``, the host engine. Each offset owns the counters
    whose second word is that offset, so a draw may run past the blocks it reserved (a
    Poisson sample takes several) without reaching another offset's values."""

    @staticmethod
    def generator(seed: int, offset: int) -> numpy.random.Generator:
        return numpy.random.Generator(numpy.random.Philox(key=[seed & _MASK64, 0],
                                                          counter=[0, offset & _MASK64, 0, 0]))

    def uniform(self, seed, offset, n, dtype):
        """``n`` values uniform on (0, 1] (cuRAND's interval)."""
        return dtype.type(1) - self.generator(seed, offset).random(n, dtype=dtype)

    def normal(self, seed, offset, n, dtype):
        return self.generator(seed, offset).standard_normal(n, dtype=dtype)

    def bits(self, seed, offset, n):
        """``n`` uniform uint32 values."""
        return self.generator(seed, offset).integers(0, 1 << 32, n, dtype=numpy.uint32)


class CurandPhilox:
    """cuRAND's Philox4x32-10 host generator on CUDA device ``index`` (one per device, shared
    by its Generators: ``CurandPhilox.on``), seeded and moved to the offset before each draw,
    writing into a new cupy array on that device's current stream."""

    _engines: dict = {}

    def __init__(self, cupy, index: int):
        self._cp, self.index = cupy, index
        self._handle = None

    @classmethod
    def on(cls, cupy, index: int) -> "CurandPhilox":
        engine = cls._engines.get(index)
        if engine is None:
            engine = cls._engines[index] = cls(cupy, index)
        return engine

    def _draw(self, fill, seed: int, offset: int, n: int, dtype, pairs: bool = False):
        """A new array of ``n`` values of ``dtype`` that ``fill(curand, handle, ptr, count)``
        writes, drawn from ``(seed, offset)``."""
        from cupy.cuda import curand
        cp = self._cp
        with cp.cuda.Device(self.index):
            out = cp.empty(n + n % 2 if pairs else n, dtype)  # cuRAND makes normals in pairs
            if n:
                if self._handle is None:
                    self._handle = curand.createGenerator(curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
                curand.setStream(self._handle, cp.cuda.get_current_stream().ptr)
                curand.setPseudoRandomGeneratorSeed(self._handle, seed & _MASK64)
                curand.setGeneratorOffset(self._handle, offset & _MASK64)
                fill(curand, self._handle, out.data.ptr, out.size)
            return out[:n]

    @staticmethod
    def _float(dtype) -> bool:
        """Whether ``dtype`` is float64 (else float32); TypeError for another: cuRAND writes
        only these."""
        name = numpy.dtype(dtype).name
        if name not in ("float32", "float64"):
            raise TypeError(f"cuRAND draws float32 or float64 values, not {name}")
        return name == "float64"

    def uniform(self, seed, offset, n, dtype):
        """``n`` values uniform on (0, 1] (cuRAND's interval)."""
        wide = self._float(dtype)
        return self._draw(lambda c, h, ptr, count: (c.generateUniformDouble if wide else c.generateUniform)(
            h, ptr, count), seed, offset, n, dtype)

    def normal(self, seed, offset, n, dtype):
        wide = self._float(dtype)
        return self._draw(lambda c, h, ptr, count: (c.generateNormalDouble if wide else c.generateNormal)(
            h, ptr, count, 0.0, 1.0), seed, offset, n, dtype, pairs=True)

    def bits(self, seed, offset, n):
        """``n`` uniform uint32 values."""
        return self._draw(lambda c, h, ptr, count: c.generate(h, ptr, count), seed, offset, n, numpy.uint32)


class PhiloxDraws:
    """numpy Generator's methods over a counter-based engine.

    Args:
        engine: ``CurandPhilox`` or ``NumpyPhilox``.
        reserve: ``(blocks) -> (seed, offset)``, the Generator's ``philox_seed_offset``.
        xp: the array module of the engine's arrays (cupy or numpy).
    """

    bit_generator = None  # no state of its own: the Generator's seed and offset are all of it

    def __init__(self, engine, reserve, xp):
        self._engine, self._reserve, self._xp = engine, reserve, xp

    def _words(self, kind: str, n: int, dtype):
        """``n`` values of ``engine.<kind>``, from the next blocks of the stream."""
        dtype = numpy.dtype(dtype)
        words = n * max(1, dtype.itemsize // 4)
        seed, block = self._reserve(-(-words // 4) + 1)  # 4 words a block, one spare for pairing
        args = (seed, block * 4, n) if kind == "bits" else (seed, block * 4, n, dtype)
        return getattr(self._engine, kind)(*args)

    def _open_unit(self, size, dtype=numpy.float64):
        """Uniform on (0, 1], shaped ``size``."""
        shape = _shape(size)
        return self._words("uniform", math.prod(shape), dtype).reshape(shape)

    def _host(self) -> numpy.random.Generator:
        """numpy's Philox for one host draw: one block of the stream, which owns the counters
        that follow it (``NumpyPhilox``)."""
        seed, block = self._reserve(1)
        return NumpyPhilox.generator(seed, block)

    # ---- numpy.random.Generator's methods -------------------------------------------

    def random(self, size=None, dtype=numpy.float64):
        """Uniform on [0, 1): cuRAND's (0, 1] with 1 mapped to 0."""
        u = self._open_unit(size, dtype)
        return self._xp.where(u == 1, u.dtype.type(0), u)

    def standard_normal(self, size=None, dtype=numpy.float64):
        shape = _shape(size)
        return self._words("normal", math.prod(shape), dtype).reshape(shape)

    def normal(self, loc=0.0, scale=1.0, size=None):
        return loc + scale * self.standard_normal(size)

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        return self._xp.exp(self.normal(mean, sigma, size))

    def uniform(self, low=0.0, high=1.0, size=None):
        return low + (high - low) * self.random(size)

    def exponential(self, scale=1.0, size=None):
        return -self._xp.log(self._open_unit(size)) * scale

    def standard_cauchy(self, size=None):
        return self._xp.tan(math.pi * (self.random(size) - 0.5))

    def geometric(self, p, size=None):
        """Trials to the first success (1, 2, ...), by inversion: ceil(log(u) / log(1 - p))."""
        xp = self._xp
        k = xp.ceil(xp.log(self._open_unit(size)) / xp.log1p(-xp.asarray(p, dtype=numpy.float64)))
        return xp.maximum(k, 1).astype(numpy.int64)

    def integers(self, low, high=None, size=None, dtype=numpy.int64, endpoint=False):
        """Integers on [low, high) (``endpoint``: [low, high]); ``high=None`` means [0, low).
        A range up to 2**32 scales 32 random bits (Lemire's multiply-shift); a wider one takes
        64 bits modulo the range (a bias below range / 2**64)."""
        if high is None:
            low, high = 0, low
        span = int(high) - int(low) + (1 if endpoint else 0)
        if span <= 0:
            raise ValueError(f"high <= low: [{low}, {high})")
        shape = _shape(size)
        n = math.prod(shape)
        if span <= 1 << 32:
            bits = self._words("bits", n, numpy.uint32).astype(numpy.uint64)
            offsets = (bits * numpy.uint64(span)) >> numpy.uint64(32)
        else:
            bits = self._words("bits", 2 * n, numpy.uint32).astype(numpy.uint64)
            offsets = (bits[:n] << numpy.uint64(32)) | bits[n:]
            if span < 1 << 64:
                offsets = offsets % numpy.uint64(span)
        # low + offset in 64-bit two's complement: uint64 sums wrap as int64's do
        values = (offsets + numpy.uint64(int(low) & _MASK64)).astype(numpy.int64)
        return values.astype(dtype).reshape(shape)

    def permutation(self, n: int):
        """A random permutation of ``range(n)`` (int64): the order of ``n`` uniform keys."""
        return self._xp.argsort(self.random(int(n)))

    # samplers with array parameters: drawn on the host, where their ops compute

    def poisson(self, lam=1.0, size=None):
        return self._host().poisson(numpy.asarray(lam, dtype=numpy.float64), size)

    def binomial(self, n, p, size=None):
        return self._host().binomial(numpy.asarray(n), numpy.asarray(p, dtype=numpy.float64), size)

    def standard_gamma(self, shape, size=None):
        return self._host().standard_gamma(numpy.asarray(shape, dtype=numpy.float64), size)

    def choice(self, a, size=None, replace=True, p=None):
        return self._host().choice(a, size, replace, p)
