"""Wire forms of every Open Inference Protocol datatype against tritonclient's own encoders."""

import ml_dtypes
import numpy as np
import pytest
import tritonclient.utils as tu

from ember_serve.datatypes import (
    DATATYPES,
    ProtocolError,
    datatype_of,
    from_binary,
    from_json_data,
    to_binary,
    to_json_data,
)

NUMERIC = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64"]


def sample(datatype, shape=(2, 3)):
    rng = np.random.default_rng(1)
    dt = tu.triton_to_np_dtype(datatype)
    if datatype == "BOOL":
        return rng.random(shape) > 0.5
    if np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("datatype", NUMERIC)
def test_numeric_binary_matches_tritonclient(datatype):
    arr = sample(datatype)
    ours = to_binary(arr, datatype)
    assert ours == arr.tobytes()  # tritonclient sends numeric tensors as their raw little-endian bytes
    back = from_binary(ours, datatype, [2, 3])
    np.testing.assert_array_equal(back, arr)
    assert tu.np_to_triton_dtype(back.dtype) == datatype
    assert datatype_of(back.dtype) == datatype


@pytest.mark.parametrize("datatype", NUMERIC)
def test_numeric_json_round_trip(datatype):
    arr = sample(datatype)
    data = to_json_data(arr, datatype)
    assert data == arr.reshape(-1).tolist()
    np.testing.assert_array_equal(from_json_data(data, datatype, [2, 3]), arr)
    nested = arr.tolist()  # the protocol allows nested lists too
    np.testing.assert_array_equal(from_json_data(nested, datatype, [2, 3]), arr)


def test_bytes_binary_matches_tritonclient():
    arr = np.array([[b"hello", b""], ["\u00e9t\u00e9".encode(), b"\x00\xff"]], dtype=object)
    ours = to_binary(arr, "BYTES")
    assert ours == tu.serialize_byte_tensor(arr).item()
    back = from_binary(ours, "BYTES", [2, 2])
    np.testing.assert_array_equal(back, tu.deserialize_bytes_tensor(ours).reshape(2, 2))


def test_bf16_binary_matches_tritonclient():
    # tritonclient sends BF16 as ml_dtypes.bfloat16 arrays' raw bytes: the upper 16 bits of each float32
    x = np.array([[1.0, -2.5, 3.140625], [0.0, 2.0 ** -10, 65280.0]], dtype=np.float32)  # exact in bfloat16
    ours = to_binary(x.astype(ml_dtypes.bfloat16), "BF16")
    assert ours == (x.view(np.uint32) >> 16).astype("<u2").tobytes()
    back = from_binary(ours, "BF16", [2, 3])
    assert back.dtype == DATATYPES["BF16"] and tu.np_to_triton_dtype(back.dtype) == "BF16"
    np.testing.assert_array_equal(back.astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert to_json_data(back, "BF16") == back.astype(np.float32).reshape(-1).tolist()


@pytest.mark.parametrize("data, datatype, shape, message", [
    ([1, 2, 3], "FP32", [2, 2], "holds 4 elements, 'data' has 3"),
    (["a"], "INT32", [1], "cannot hold the element 'a'"),
    ([1.5], "INT32", [1], "cannot hold the element 1.5"),
    ([300], "UINT8", [1], "out of the range of UINT8"),
    ([1], "BOOL", [1], "true or false"),
    ([1], "FP8", [1], "unknown datatype 'FP8'"),
    ([1], "FP32", [-1], "non-negative integers"),
    ([1], "BYTES", [1], "strings in JSON"),
])
def test_json_errors_name_the_problem(data, datatype, shape, message):
    with pytest.raises(ProtocolError, match=message.replace("(", r"\(").replace("[", r"\[")):
        from_json_data(data, datatype, shape)


def test_binary_errors_name_the_problem():
    with pytest.raises(ProtocolError, match="needs 24 bytes, got 20"):
        from_binary(b"\0" * 20, "FP32", [2, 3])
    good = tu.serialize_byte_tensor(np.array([b"ab", b"cde"], dtype=object)).item()
    with pytest.raises(ProtocolError, match="BYTES element 1 wants 3 bytes"):
        from_binary(good[:-1], "BYTES", [2])
    with pytest.raises(ProtocolError, match="left over"):
        from_binary(good + b"x", "BYTES", [2])
