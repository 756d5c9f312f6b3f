"""ember_vision's ResNet18 and MobileNetV3-small exported with ember.onnx.export and a
dynamic batch axis: the file passes onnx's full check and onnxruntime computes what eager
ember does, at the traced batch size and at others."""

import io

import numpy as np
import onnx
import onnxruntime
import pytest

import ember
import ember_vision.models as models


@pytest.mark.parametrize("builder", ["resnet18", "mobilenet_v3_small"])
def test_vision_model_runs_in_onnxruntime_at_other_batch_sizes(builder):
    ember.manual_seed(0)
    model = getattr(models, builder)(num_classes=10).eval()
    with ember.no_grad():  # running statistics away from 0/1
        model.train()(ember.randn(4, 3, 64, 64))
    model.eval()
    x = ember.randn(2, 3, 64, 64)
    buffer = io.BytesIO()
    ember.onnx.export(model, (x,), buffer, input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    sess = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    for batch in (x, ember.randn(1, 3, 64, 64), ember.randn(3, 3, 64, 64)):
        (got,) = sess.run(["logits"], {"image": batch.numpy()})
        with ember.no_grad():
            want = model(batch).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert {t.name for t in proto.graph.initializer} <= set(model.state_dict())
