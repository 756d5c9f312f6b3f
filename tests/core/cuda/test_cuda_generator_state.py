"""The generator's Philox offset (the counter state of the CUDA dropout kernels), on the
CPU: ``philox_seed_offset`` hands out disjoint counter ranges, the state saves and restores
the offset, ``manual_seed`` resets it, and a CPU generator's state and draws are as before."""

import pickle

import numpy as np
import pytest

import ember


def test_generator_philox_offset_and_state():
    gen = ember.Generator().manual_seed(123)
    plain = gen.get_state()
    assert gen.philox_seed_offset(3) == (123, 0)
    assert gen.philox_seed_offset(5) == (123, 3)
    saved = gen.get_state()
    assert gen.philox_seed_offset(1) == (123, 8)
    gen.set_state(saved)
    assert gen.philox_seed_offset(0) == (123, 8)
    gen.set_state(plain)  # a state from before any counter-based draw: offset 0
    assert gen.philox_seed_offset(0) == (123, 0)
    gen.philox_seed_offset(10)
    gen.manual_seed(7)
    assert gen.philox_seed_offset(0) == (7, 0)
    gen._philox_offset = 2 ** 64 - 1
    assert gen.philox_seed_offset(2) == (7, 2 ** 64 - 1) and gen.philox_seed_offset(0) == (7, 1)


def test_cpu_generator_state_keeps_its_layout_and_draws():
    gen = ember.Generator().manual_seed(5)
    state = gen.get_state()
    first = gen.bit_generator.random(4)
    gen.philox_seed_offset(2)
    gen.set_state(state)
    np.testing.assert_array_equal(gen.bit_generator.random(4), first)
    # a state without the bit generator's (a cuda generator's) is not a CPU generator's
    foreign = ember.tensor(list(pickle.dumps((5, None, 4))), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="get_state"):
        gen.set_state(foreign)
