import pytest

from ember_serve import ModelConfig, TensorSpec


def test_defaults_and_round_trip():
    c = ModelConfig()
    assert (c.max_batch_size, c.max_batch_delay_ms, c.workers, c.device, c.response_timeout_s) == (0, 0.0, 1, "cpu",
                                                                                                    120.0)
    assert c.max_request_bytes == 64 * 1024 * 1024
    c2 = ModelConfig.from_dict({"max_batch_size": 4, "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}]})
    assert ModelConfig.from_json(c2.to_json()) == c2
    assert c2.inputs[0] == TensorSpec("x", "FP32", [-1, 3])
    assert c2.inputs[0].matches((7, 3)) and not c2.inputs[0].matches((7, 4)) and not c2.inputs[0].matches((3,))


@pytest.mark.parametrize("d, message", [
    ({"max_batch_sise": 4}, "unknown config key"),
    ({"workers": -1}, "'workers' must be an integer >= 1"),
    ({"max_batch_size": 2.5}, "'max_batch_size' must be an integer"),
    ({"response_timeout_s": 0}, "'response_timeout_s' must be > 0"),
    ({"inputs": [{"name": "x", "datatype": "FLOAT", "shape": [1]}]}, "datatype must be one of"),
    ({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-2]}]}, "shape must be a list of integers >= -1"),
])
def test_bad_configs_are_named(d, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_dict(d)


def test_bad_json():
    with pytest.raises(ValueError, match="not valid JSON"):
        ModelConfig.from_json("{")
