"""Every CUDA kernel source compiles as cupy will compile it (NVRTC, compute capability
9.0, the same options), on machines without a GPU too, and defines the kernels it names;
assembled for the H200 (sm_90), no kernel spills registers or outgrows a block's static
shared memory."""

import functools
import os
import re
import subprocess
import sys

import pytest
from _nvrtc import CompileError, compile_ptx, machine_resources

from ember.cuda import kernels
from ember.cuda.kernels import attention

FAMILIES = sorted(kernels.sources())


@pytest.mark.parametrize("family", FAMILIES)
def test_source_compiles_and_defines_its_kernels(family):
    kernel = kernels.sources()[family]
    ptx = compile_ptx(kernel.source, f"{family}.cu")
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    assert entries == set(kernel.names)


@functools.lru_cache(maxsize=None)
def _resources(family):
    return machine_resources(kernels.sources()[family].source, f"{family}.cu")


@pytest.mark.parametrize("family", FAMILIES)
def test_machine_code_neither_spills_nor_outgrows_shared_memory(family):
    found = _resources(family)
    assert set(found) == set(kernels.sources()[family].names)
    for name, used in found.items():
        assert used["spill_stores"] == used["spill_loads"] == 0, (name, used)
        assert used["shared"] <= 48 << 10, (name, used)  # more needs an opt-in per kernel


def test_attention_blocks_use_the_shared_memory_and_registers_planned():
    found = _resources("attention")
    for dtype in attention.TILES:
        for kernel in ("forward", "backward_kv", "backward_q"):
            used = found[f"attention_{kernel}_{dtype}"]
            assert used["shared"] == attention.shared_bytes(kernel, dtype) <= attention.SHARED_LIMIT
            assert used["registers"] * attention.THREADS <= 65536  # a block fits one multiprocessor's registers


def test_a_broken_source_is_refused():
    # the check can fail: a type error in a kernel is NVRTC's error, with its log
    source = kernels.sources()["softmax"].source + 'extern "C" __global__ void bad(float* x) { x[0] = undefined; }'
    with pytest.raises(CompileError, match="undefined"):
        compile_ptx(source)


def test_list_sources_writes_every_family(tmp_path):
    out = subprocess.run([sys.executable, "-m", "ember.cuda.kernels", "--list-sources", str(tmp_path / "cu")],
                         capture_output=True, text=True, check=True)
    written = sorted(os.listdir(tmp_path / "cu"))
    assert written == [f"{f}.cu" for f in FAMILIES]
    assert out.stdout.split() == [str(tmp_path / "cu" / name) for name in written]
    for family in FAMILIES:
        assert (tmp_path / "cu" / f"{family}.cu").read_text() == kernels.sources()[family].source


def test_function_names_the_kernels_a_family_has():
    with pytest.raises(KeyError, match="softmax_forward_float32"):
        kernels.function("softmax", "softmax_forward_int8")


def test_function_without_a_gpu_raises_torchs_error():
    import ember
    if ember.cuda._cupy_module() is None:
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            kernels.function("softmax", "softmax_forward_float32")
    elif not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
            kernels.function("softmax", "softmax_forward_float32")
    else:
        assert kernels.function("softmax", "softmax_forward_float32") is not None
