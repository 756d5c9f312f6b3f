"""The compiler's generated CUDA (``fusion.cuda_codegen``) compiles as cupy will compile it
(NVRTC, compute capability 9.0), on machines without a GPU too: the per-row kernels as
the translation units cupy.RawModule gets, the element-wise bodies inside the module
cupy wraps an ElementwiseKernel in (``_cupy_elementwise``), for every region, forward and
backward, of the programs in ``_fused_programs``, in float32 and float64."""

import pytest
from _cupy_elementwise import names, translation_unit
from _fused_programs import PROGRAMS, regions
from _nvrtc import compile_ptx

from ember.compiler.fusion import cuda_codegen
from ember.compiler.fusion.cuda_codegen import SHARED_LIMIT, ElementwiseKernel, RowKernel


def _compile(kernel, in_kinds):
    if isinstance(kernel, ElementwiseKernel):
        ptx = compile_ptx(translation_unit(kernel, in_kinds), f"{kernel.name}.cu")
    else:
        ptx = compile_ptx(kernel.source, f"{kernel.name}.cu")
    assert names(ptx) == {kernel.name}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_fused_kernel_compiles(name, dtype):
    for region in regions(name):
        forward, backward = region.cuda_kernels(dtype)
        _compile(forward, [v.kind for v in region.inputs])
        assert backward is not None, "every program here has inputs that need gradients"
        _compile(backward, [v.kind for v in region.bwd_inputs])
        for kernel in (forward, backward):
            if isinstance(kernel, RowKernel):
                assert kernel.shared_bytes <= SHARED_LIMIT


def test_the_kernel_shape_follows_the_program():
    # an epilogue without a reduction is an ElementwiseKernel; its backward sums the bias's
    # gradient over rows, so it runs per row; programs with row reductions run per row
    (mlp,) = regions("gelu_mlp")
    forward, backward = mlp.cuda_kernels("float32")
    assert isinstance(forward, ElementwiseKernel) and isinstance(backward, RowKernel) and backward.column_sums
    for name in ("layer_norm_ce", "softmax_ce", "symbolic_scalar"):
        for region in regions(name):
            assert all(isinstance(k, RowKernel) for k in region.cuda_kernels("float32"))


def test_costly_values_go_to_shared_memory_or_are_recomputed():
    (region,) = regions("layer_norm_ce")
    p, ins = region.p, region.inputs
    kept = cuda_codegen.row_kernel(p, ins, region.fwd_values, region.fwd_kinds, "float32", region.width)
    assert kept.shared_bytes > 0 and "row_buffers" in kept.source  # the GELU output and the shifted logits
    recomputed = cuda_codegen.row_kernel(p, ins, region.fwd_values, region.fwd_kinds, "float32", region.width,
                                         shared_limit=0)
    assert recomputed.shared_bytes == 0 and "row_buffers" not in recomputed.source
    assert recomputed.source.count("erfc(") > kept.source.count("erfc(")
    _compile(recomputed, None)


def test_a_symbolic_scalar_is_a_kernel_argument():
    (region,) = regions("symbolic_scalar")
    kinds = [v.kind for v in region.inputs]
    assert kinds == ["vec", "scalar"]
    forward, _ = region.cuda_kernels("float32")
    assert "const float s1 = a1[0];" in forward.source  # read at each call, not baked in
    assert "0.75" not in forward.source and "1.25" not in forward.source
