"""Run an exported model in onnxruntime next to ember's eager result."""

import io

import numpy as np
import onnx
import onnxruntime

import ember


def session(proto_or_path):
    source = proto_or_path if isinstance(proto_or_path, str) else proto_or_path.SerializeToString()
    return onnxruntime.InferenceSession(source, providers=["CPUExecutionProvider"])


def check_against_eager(model, args, opset_version=None, rtol=1e-5, atol=1e-6, **kwargs):
    """Export ``model``, check the file fully, run it and compare every output with eager ember."""
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, opset_version=opset_version, **kwargs)
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    sess = session(proto)
    feeds = {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)}
    got = sess.run(None, feeds)
    with ember.no_grad():
        want = model(*args)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)
    return proto


def check_at_sizes(model, proto, input_lists, rtol=1e-5, atol=1e-5):
    """Run the file at each list of inputs (the traced sizes and others of its dynamic axes)
    and compare every output with eager ember there."""
    onnx.checker.check_model(proto, full_check=True)
    sess = session(proto)
    for inputs in input_lists:
        got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), inputs)})
        with ember.no_grad():
            want = model(*inputs)
        want = _flat(want)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=atol)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _flat(v)]
    return [value]
