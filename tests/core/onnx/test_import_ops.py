"""ember.onnx.load_model operator by operator: small graphs built with onnx.helper, run in
onnxruntime (the oracle) and imported into ember on the same inputs, each at two sets
of input shapes (every input dim is dynamic in these graphs)."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper, shape_inference

import ember

RNG = np.random.default_rng(0)
F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def _elem(array):
    return helper.np_dtype_to_tensor_dtype(array.dtype)


def _model(nodes, first, outputs, initializers, out_types, out_ranks):
    inputs = [helper.make_tensor_value_info(name, _elem(a), [f"{name}_{i}" for i in range(a.ndim)])
              for name, a in first.items()]
    outs = [helper.make_tensor_value_info(o, out_types.get(o, F32), None) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "g", inputs, outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    inferred = shape_inference.infer_shapes(model)  # the outputs' shapes, which the checker wants
    found = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in model.graph.output:
        if out.name in found and found[out.name].type.tensor_type.HasField("shape"):
            out.type.CopyFrom(found[out.name].type)
        else:
            out.CopyFrom(helper.make_tensor_value_info(out.name, out_types.get(out.name, F32),
                                                       [None] * (out_ranks or {})[out.name]))
    return model


def _session(nodes, first, outputs, initializers, out_types=None, out_ranks=None):
    model = _model(nodes, first, outputs, initializers, out_types or {}, out_ranks)
    return onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def check(nodes, feeds, outputs, initializers=None, out_types=None, out_ranks=None, rtol=1e-5, atol=1e-6):
    """Run the graph in onnxruntime and imported in ember on each feed dict; compare.
    ``out_ranks`` gives the rank of outputs whose shape onnx's inference leaves open."""
    feeds = feeds if isinstance(feeds, list) else [feeds]
    first = feeds[0]
    model = _model(nodes, first, outputs, initializers, out_types or {}, out_ranks)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    gm = ember.onnx.load_model(model)
    for feed in feeds:
        want = session.run(None, feed)
        with ember.no_grad():
            got = gm(*[ember.from_numpy(feed[name].copy()) for name in first])
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.numpy().dtype == w.dtype, (g.dtype, w.dtype)
            np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol)
    return gm


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs if isinstance(outputs, list) else [outputs], **attrs)


def test_reshape_to_a_shape_computed_from_the_input():
    nodes = [node("Shape", ["x"], "s"), node("Gather", ["s", "zero"], "n", axis=0),
             node("Unsqueeze", ["n", "axes0"], "n1"), node("Concat", ["n1", "minus_one"], "target", axis=0),
             node("Reshape", ["x", "target"], "flat"), node("Reshape", ["x", "keep"], "kept")]
    inits = {"zero": np.array(0, np.int64), "axes0": np.array([0], np.int64), "minus_one": np.array([-1], np.int64),
             "keep": np.array([0, -1, 2], np.int64)}
    gm = check(nodes, [{"x": randn(2, 3, 4)}, {"x": randn(5, 3, 4)}], ["flat", "kept"], inits)
    assert "runtime.shape(x)" in gm.code


def test_slice_with_negative_steps_clamped_bounds_and_computed_ends():
    i64 = np.iinfo(np.int64)
    nodes = [node("Slice", ["x", "s1", "e1", "a1", "st1"], "y1"),
             node("Slice", ["x", "s2", "e2", "a2", "st2"], "y2"),
             node("Shape", ["x"], "shape"), node("Slice", ["shape", "one", "two"], "d1"),
             node("Sub", ["d1", "one"], "end"), node("Slice", ["x", "one", "end", "one"], "y3")]
    inits = {"s1": np.array([1, -1], np.int64), "e1": np.array([i64.max, i64.min], np.int64),
             "a1": np.array([0, 2], np.int64), "st1": np.array([2, -2], np.int64),
             "s2": np.array([-100, 10], np.int64), "e2": np.array([-1, -100], np.int64),
             "a2": np.array([1, 2], np.int64), "st2": np.array([1, -1], np.int64),
             "one": np.array([1], np.int64), "two": np.array([2], np.int64)}
    check(nodes, [{"x": randn(5, 4, 6)}, {"x": randn(3, 7, 2)}], ["y1", "y2", "y3"], inits)


def test_gather_negative_and_matrix_indices_and_gather_elements():
    nodes = [node("Gather", ["x", "idx"], "y", axis=1), node("Gather", ["x", "scalar"], "z", axis=-1),
             node("GatherElements", ["x", "ge"], "w", axis=2)]
    inits = {"idx": np.array([[0, -1], [1, 1]], np.int64), "scalar": np.array(-2, np.int64),
             "ge": np.array([[[0, -1]], [[1, 0]]], np.int64)}
    check(nodes, {"x": randn(2, 3, 4)}, ["y", "z", "w"], inits)


def test_gather_nd_with_batch_dims_negative_and_repeated_indices():
    nodes = [node("GatherND", ["x", "rows"], "y"), node("GatherND", ["x", "cells"], "z"),
             node("GatherND", ["x", "per_batch"], "w", batch_dims=1)]
    inits = {"rows": np.array([[[0], [-1]], [[1], [1]]], np.int64),  # whole [3, 4] slices, one twice
             "cells": np.array([[0, 2, -1], [1, -3, 0], [0, 2, -1]], np.int64),
             "per_batch": np.array([[[2], [0]], [[-1], [1]]], np.int64)}
    gm = check(nodes, {"x": randn(2, 3, 4)}, ["y", "z", "w"], inits)
    x = ember.from_numpy(randn(2, 3, 4)).requires_grad_()
    sum(o.sum() for o in gm(x)).backward()
    want = np.zeros((2, 3, 4), np.float32)  # how often each entry is gathered
    want[0] += 1
    want[1] += 3
    want[0, 2, 3] += 2
    want[1, 0, 0] += 1
    want[0, 2] += 1
    want[0, 0] += 1
    want[1, 2] += 1
    want[1, 1] += 1
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_flatten_at_the_rank_and_negative_axes():
    nodes = [node("Flatten", ["x"], "f3", axis=3), node("Flatten", ["x"], "fm1", axis=-1),
             node("Flatten", ["x"], "fm3", axis=-3)]
    check(nodes, [{"x": randn(2, 3, 4)}, {"x": randn(5, 1, 2)}], ["f3", "fm1", "fm3"])


def test_expand_both_ways_and_tile():
    nodes = [node("Expand", ["x", "shape"], "y"), node("Tile", ["x", "reps"], "t")]
    inits = {"shape": np.array([2, 1, 4], np.int64), "reps": np.array([2, 3], np.int64)}
    check(nodes, {"x": randn(3, 1)}, ["y", "t"], inits)


def test_split_into_equal_parts_and_by_sizes():
    nodes = [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3),
             node("Split", ["x", "sizes"], ["d", "e"], axis=0)]
    check(nodes, {"x": randn(5, 7)}, ["a", "b", "c", "d", "e"], {"sizes": np.array([2, 3], np.int64)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(mode):
    nodes = [node("Pad", ["x", "pads", "value"], "y", mode=mode), node("Pad", ["x", "crop", "", "axes"], "z")]
    inits = {"pads": np.array([0, 1, 2, 0, 2, 1], np.int64), "value": np.array(1.5, np.float32),
             "crop": np.array([1, 0, -1, 1], np.int64), "axes": np.array([-1, 0], np.int64)}
    check(nodes, {"x": randn(3, 4, 5)}, ["y", "z"], inits)


def test_integer_division_and_modulo():
    a = np.array([7, -7, 7, -7, 0], np.int64)
    b = np.array([2, 2, -2, -3, 5], np.int64)
    nodes = [node("Div", ["a", "b"], "q"), node("Mod", ["a", "b"], "m"), node("Mod", ["a", "b"], "f", fmod=1),
             node("Pow", ["a", "two"], "p")]
    check(nodes, {"a": a, "b": b}, ["q", "m", "f", "p"], {"two": np.array(2, np.int64)},
          out_types={"q": I64, "m": I64, "f": I64, "p": I64})


def test_trilu_range_constant_of_shape_and_cumsum():
    value = numpy_helper.from_array(np.array([2.5], np.float32))
    nodes = [node("Trilu", ["x", "k"], "up", upper=1), node("Trilu", ["x", "mk"], "low", upper=0),
             node("Shape", ["x"], "s"), node("ConstantOfShape", ["s"], "full", value=value),
             node("Range", ["start", "limit", "delta"], "r"),
             node("CumSum", ["x", "axis"], "cs", exclusive=1, reverse=1), node("CumSum", ["x", "axis"], "c")]
    inits = {"k": np.array(1, np.int64), "mk": np.array(-1, np.int64), "start": np.array(0.5, np.float32),
             "limit": np.array(3.0, np.float32), "delta": np.array(0.75, np.float32), "axis": np.array(1, np.int64)}
    check(nodes, [{"x": randn(4, 5)}, {"x": randn(2, 3)}], ["up", "low", "full", "r", "cs", "c"], inits)


def _lstm_weights(gates, dirs, hidden, inputs):
    return {"W": randn(dirs, gates * hidden, inputs) * 0.5, "R": randn(dirs, gates * hidden, hidden) * 0.5,
            "B": randn(dirs, 2 * gates * hidden) * 0.5}


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_directions_with_initial_states(direction):
    dirs, hidden = 2 if direction == "bidirectional" else 1, 3
    inits = _lstm_weights(4, dirs, hidden, 2)
    nodes = [node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y", "yh", "yc"], hidden_size=hidden,
                  direction=direction)]
    feeds = [{"x": randn(5, 2, 2), "h0": randn(dirs, 2, hidden), "c0": randn(dirs, 2, hidden)},
             {"x": randn(3, 4, 2), "h0": randn(dirs, 4, hidden), "c0": randn(dirs, 4, hidden)}]
    check(nodes, feeds, ["y", "yh", "yc"], inits)


def test_lstm_batch_first_layout_without_bias_or_states():
    """layout=1 ([batch, seq, ...]), which onnxruntime's CPU LSTM refuses: the oracle is
    onnxruntime's layout=0 LSTM on the transposed input."""
    inits = _lstm_weights(4, 1, 3, 2)
    del inits["B"]
    x = randn(4, 5, 2)
    layout0 = [node("LSTM", ["x", "W", "R"], ["y", "yh"], hidden_size=3)]
    session = _session(layout0, {"x": x.transpose(1, 0, 2)}, ["y", "yh"], inits)
    y, yh = session.run(None, {"x": x.transpose(1, 0, 2)})
    layout1 = [node("LSTM", ["x", "W", "R"], ["y", "yh"], hidden_size=3, layout=1)]
    model = _model(layout1, {"x": x}, ["y", "yh"], inits, {}, {"y": 4, "yh": 3})
    got_y, got_yh = ember.onnx.load_model(model)(ember.from_numpy(x))
    np.testing.assert_allclose(got_y.detach().numpy(), y.transpose(2, 0, 1, 3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_yh.detach().numpy(), yh.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_gru_and_rnn(direction):
    dirs = 2 if direction == "bidirectional" else 1
    gru = _lstm_weights(3, dirs, 4, 3)
    rnn = {f"r{k}": v for k, v in _lstm_weights(1, dirs, 4, 3).items()}
    nodes = [node("GRU", ["x", "W", "R", "B"], ["y", "yh"], hidden_size=4, direction=direction,
                  linear_before_reset=1),
             node("RNN", ["x", "rW", "rR", "rB"], ["ry", "ryh"], hidden_size=4, direction=direction),
             node("RNN", ["x", "rW", "rR"], ["relu_y"], hidden_size=4, direction=direction,
                  activations=["Relu"] * dirs)]
    check(nodes, [{"x": randn(4, 2, 3)}, {"x": randn(6, 3, 3)}], ["y", "yh", "ry", "ryh", "relu_y"], {**gru, **rnn})


def test_conv_and_pooling_attributes():
    inits = {"w": randn(6, 2, 3, 3), "b": randn(6), "wt": randn(4, 3, 3, 3)}
    nodes = [node("Conv", ["x", "w", "b"], "c1", pads=[1, 0, 2, 1], strides=[2, 1], dilations=[1, 2], group=2),
             node("Conv", ["x", "w"], "c2", group=2, auto_pad="VALID"),
             node("MaxPool", ["x"], "m1", kernel_shape=[3, 2], pads=[1, 0, 0, 1], strides=[2, 2], ceil_mode=1),
             node("MaxPool", ["x"], "m2", kernel_shape=[2, 2], dilations=[2, 1]),
             node("AveragePool", ["x"], "a1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0,
                  strides=[2, 2]),
             node("AveragePool", ["x"], "a2", kernel_shape=[2, 3], pads=[0, 1, 1, 0], count_include_pad=1),
             node("GlobalAveragePool", ["x"], "g1"), node("GlobalMaxPool", ["x"], "g2"),
             node("ConvTranspose", ["y", "wt"], "t", strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 0])]
    feeds = [{"x": randn(2, 4, 9, 8), "y": randn(2, 4, 5, 5)}, {"x": randn(1, 4, 7, 10), "y": randn(3, 4, 4, 6)}]
    check(nodes, feeds, ["c1", "c2", "m1", "m2", "a1", "a2", "g1", "g2", "t"], inits, atol=1e-5)


def test_gemm_attributes_and_matmul():
    nodes = [node("Gemm", ["a", "b", "c"], "y", alpha=0.5, beta=2.0, transA=1),
             node("Gemm", ["at", "b"], "z", transB=0), node("MatMul", ["x3", "b"], "m")]
    check(nodes, {"a": randn(4, 3), "at": randn(3, 4), "x3": randn(2, 5, 4)}, ["y", "z", "m"],
          {"b": randn(4, 6), "c": randn(1, 6)})


def test_reductions():
    nodes = [node("ReduceSum", ["x", "empty"], "s_noop", noop_with_empty_axes=1),
             node("ReduceSum", ["x"], "s_all", keepdims=0), node("ReduceMax", ["x", "a"], "mx", keepdims=0),
             node("ReduceMean", ["x", "a2"], "mean"), node("ReduceL2", ["x", "a"], "l2"),
             node("ReduceLogSumExp", ["x", "a"], "lse"), node("ReduceProd", ["x", "a2"], "prod"),
             node("ReduceSumSquare", ["x", "a"], "ss"), node("ReduceMin", ["x"], "mn"),
             node("ArgMax", ["t"], "am", axis=1, select_last_index=1), node("ArgMin", ["t"], "an", axis=0, keepdims=0)]
    t = np.array([[1, 3, 3], [2, 2, 0]], np.float32)
    inits = {"empty": np.zeros(0, np.int64), "a": np.array([-1], np.int64), "a2": np.array([0, 2], np.int64)}
    check(nodes, {"x": randn(3, 4, 5), "t": t}, ["s_noop", "s_all", "mx", "mean", "l2", "lse", "prod", "ss", "mn",
                                                 "am", "an"], inits, out_types={"am": I64, "an": I64}, atol=1e-5)


def test_elementwise_activations_and_logic():
    nodes = [node("HardSigmoid", ["x"], "hs"), node("LeakyRelu", ["x"], "lr", alpha=0.3),
             node("PRelu", ["x4", "slope"], "pr"), node("Selu", ["x"], "se"), node("Celu", ["x"], "ce", alpha=0.7),
             node("Elu", ["x"], "el", alpha=0.5), node("Softplus", ["x"], "sp"), node("Softsign", ["x"], "ss"),
             node("Clip", ["x", "", "hi"], "cl"), node("Max", ["x", "y", "z"], "mx"), node("Mean", ["x", "y"], "mn"),
             node("Sum", ["x", "y", "z"], "sm"), node("Less", ["x", "y"], "lt"), node("Not", ["lt"], "nlt"),
             node("Where", ["lt", "x", "half"], "wh"), node("Softmax", ["x4"], "smx", axis=1),
             node("LogSoftmax", ["x4"], "lsm", axis=0), node("Gelu", ["x"], "ge", approximate="tanh"),
             node("Round", ["x"], "rd"), node("Sign", ["x"], "sg"), node("Mish", ["x"], "mi"),
             node("HardSwish", ["x"], "hw"), node("Reciprocal", ["y"], "rc")]
    inits = {"slope": randn(3, 1, 1), "hi": np.array(0.4, np.float32), "half": np.array(0.5, np.float32)}
    x = randn(3, 5) * 3
    x[0, :3] = [0.5, 1.5, -2.5]  # ties round to even
    outs = ["hs", "lr", "pr", "se", "ce", "el", "sp", "ss", "cl", "mx", "mn", "sm", "lt", "nlt", "wh", "smx", "lsm",
            "ge", "rd", "sg", "mi", "hw", "rc"]
    check(nodes, {"x": x, "y": randn(3, 5), "z": randn(1, 5), "x4": randn(2, 3, 4, 2)}, outs, inits,
          out_types={"lt": BOOL, "nlt": BOOL}, atol=1e-5)


def test_normalizations_and_einsum():
    nodes = [node("LayerNormalization", ["x", "ln_w", "ln_b"], "ln", axis=1, epsilon=1e-3),
             node("LayerNormalization", ["x", "w_last"], "ln2"),
             node("InstanceNormalization", ["x", "c_w", "c_b"], "inorm"),
             node("GroupNormalization", ["x", "c_w", "c_b"], "gn", num_groups=2),
             node("BatchNormalization", ["x", "c_w", "c_b", "mean", "var"], "bn", epsilon=1e-3),
             node("Einsum", ["x", "x"], "es", equation="bchw,bchv->bcwv")]
    inits = {"ln_w": randn(4, 3, 5), "ln_b": randn(4, 3, 5), "w_last": randn(5), "c_w": randn(4), "c_b": randn(4),
             "mean": randn(4), "var": np.abs(randn(4)) + 0.5}
    check(nodes, [{"x": randn(2, 4, 3, 5)}, {"x": randn(3, 4, 3, 5)}], ["ln", "ln2", "inorm", "gn", "bn", "es"],
          inits, out_ranks={"gn": 4}, atol=1e-5)


def test_shape_family():
    nodes = [node("Flatten", ["x"], "f0", axis=0), node("Flatten", ["x"], "f2", axis=2),
             node("Transpose", ["x"], "tr"), node("Transpose", ["x"], "tp", perm=[1, 0, 2]),
             node("Squeeze", ["u"], "sq"), node("Squeeze", ["u", "sq_axes"], "sq1"),
             node("Unsqueeze", ["x", "un_axes"], "un"), node("Cast", ["x"], "ci", to=TensorProto.INT32),
             node("CastLike", ["ci", "x"], "cl"), node("Size", ["x"], "n"), node("Shape", ["x"], "s", start=1, end=-1),
             node("Identity", ["x"], "same"), node("Dropout", ["x"], "drop"), node("NonZero", ["nz"], "where")]
    inits = {"sq_axes": np.array([-1], np.int64), "un_axes": np.array([0, -1, 2], np.int64)}
    nz = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    check(nodes, [{"x": randn(2, 3, 4) * 4, "u": randn(1, 3, 1), "nz": nz}], ["f0", "f2", "tr", "tp", "sq", "sq1",
          "un", "ci", "cl", "n", "s", "same", "drop", "where"], inits,
          out_types={"ci": TensorProto.INT32, "n": I64, "s": I64, "where": I64}, out_ranks={"sq": 1})
