"""Sharded checkpoints in the Hugging Face layout: shards, index, loading into a model; the
files read back by torch and safetensors' own readers."""

import json
import os

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import ember
from ember.sharded import load_sharded_checkpoint, load_state_dict_from_index, save_torch_state_dict


def _model():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(64, 32), ember.nn.ReLU(), ember.nn.Linear(32, 16),
                               ember.nn.LayerNorm(16))


def test_shards_and_index_as_huggingface_hub_writes_them(tmp_path):
    state = _model().state_dict()
    sizes = {k: v.numel() * 4 for k, v in state.items()}  # float32
    # 10 KB shards, filled in order: 0.weight and 0.bias (8320 B); 2.weight would overflow
    save_torch_state_dict(state, tmp_path, max_shard_size="10KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == sum(sizes.values())
    files = sorted(set(index["weight_map"].values()))
    assert files == [f"model-0000{i}-of-00002.safetensors" for i in (1, 2)]
    assert index["weight_map"]["0.weight"] == files[0] and index["weight_map"]["2.weight"] == files[1]
    read = {}
    for f in files:  # safetensors' own torch reader
        read.update(load_file(tmp_path / f))
    assert sorted(read) == sorted(state)
    for k, v in state.items():
        np.testing.assert_array_equal(read[k].numpy(), v.numpy())
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".part")]  # written atomically


def test_one_shard_is_one_file_and_a_resave_removes_stale_shards(tmp_path):
    state = _model().state_dict()
    save_torch_state_dict(state, tmp_path, max_shard_size="10KB")
    save_torch_state_dict(state, tmp_path)  # 5GB: it all fits
    assert sorted(os.listdir(tmp_path)) == ["model.safetensors"]


def test_load_into_a_model_one_shard_at_a_time(tmp_path):
    source = _model()
    save_torch_state_dict(source.state_dict(), tmp_path, max_shard_size=4000)
    target = ember.nn.Sequential(ember.nn.Linear(64, 32), ember.nn.ReLU(), ember.nn.Linear(32, 16),
                                 ember.nn.LayerNorm(16))
    result = load_sharded_checkpoint(target, tmp_path)
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = ember.randn(3, 64)
    assert ember.equal(target(x), source(x))
    assert sorted(load_state_dict_from_index(tmp_path)) == sorted(source.state_dict())


def test_torch_format_shards_open_with_torch_load(tmp_path):
    state = _model().state_dict()
    save_torch_state_dict(state, tmp_path, max_shard_size="10KB", safe_serialization=False)
    index = json.loads((tmp_path / "pytorch_model.bin.index.json").read_text())
    for file in set(index["weight_map"].values()):
        part = torch.load(tmp_path / file, weights_only=True)
        for k, v in part.items():
            np.testing.assert_array_equal(v.numpy(), state[k].numpy())


def test_strict_loading_names_the_keys(tmp_path):
    save_torch_state_dict(_model().state_dict(), tmp_path, max_shard_size="10KB")
    other = ember.nn.Sequential(ember.nn.Linear(64, 32))
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\): "2.bias"'):
        load_sharded_checkpoint(other, tmp_path)
    bigger = ember.nn.Sequential(*_model(), ember.nn.Linear(16, 2))
    with pytest.raises(RuntimeError, match=r'Missing key\(s\): "4.bias", "4.weight"'):
        load_sharded_checkpoint(bigger, tmp_path)
    loose = load_sharded_checkpoint(bigger, tmp_path, strict=False)
    assert sorted(loose.missing_keys) == ["4.bias", "4.weight"]
    with pytest.raises(ValueError, match="Can't find a checkpoint index"):
        load_sharded_checkpoint(other, tmp_path / "nowhere")
    with pytest.raises(ValueError, match="max_shard_size"):
        save_torch_state_dict({}, tmp_path, max_shard_size="lots")


def _every_dtype():
    """One torch tensor of each dtype safetensors names that ember has (bfloat16, bool, 0-d,
    empty and a non-contiguous view included)."""
    g = torch.Generator().manual_seed(1)
    base = torch.randn(4, 6, generator=g)
    out = {"f32": base, "f32_t": base.t(), "f64": base.double(), "f16": base.half(), "bf16": base.bfloat16(),
           "c64": torch.randn(3, generator=g, dtype=torch.complex64), "i64": torch.arange(7),
           "i32": torch.arange(5, dtype=torch.int32), "i16": torch.arange(-3, 3, dtype=torch.int16),
           "i8": torch.arange(-4, 4, dtype=torch.int8), "u8": torch.arange(9, dtype=torch.uint8),
           "mask": base[0] > 0, "scalar": torch.tensor(1.5), "empty": torch.zeros(0, 3)}
    return out


def _to_ember(t):
    from conftest import to_ember
    return to_ember(t)


def _mapped(path) -> list:
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        rows = [line.split(None, 5) for line in f]
    return [tuple(int(x, 16) for x in r[0].split("-")) for r in rows if len(r) == 6 and r[5].strip() == real]


def test_safetensors_of_every_dtype_written_as_safetensors_writes_them(tmp_path):
    from safetensors.torch import save
    src = _every_dtype()
    save_torch_state_dict({k: _to_ember(v) for k, v in src.items()}, tmp_path, metadata={"note": "x"})
    ours = (tmp_path / "model.safetensors").read_bytes()
    theirs = save({k: v.contiguous() for k, v in src.items()}, metadata={"format": "pt", "note": "x"})
    # the same layout and bytes; only the metadata's key order may differ (a hash map there)
    n = int.from_bytes(theirs[:8], "little")
    assert ours[:8] == theirs[:8] and ours[8 + n:] == theirs[8 + n:]
    assert json.loads(ours[8:8 + n]) == json.loads(theirs[8:8 + n])
    assert list(json.loads(ours[8:8 + n])) == list(json.loads(theirs[8:8 + n]))
    back = load_file(tmp_path / "model.safetensors")
    for k, v in src.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v)
    with pytest.raises(TypeError, match="complex128"):
        save_torch_state_dict({"z": ember.zeros(2, dtype=ember.complex128)}, tmp_path / "c128")


@pytest.mark.parametrize("mmap", [False, True])
def test_safetensors_of_every_dtype_read_and_mapped(tmp_path, mmap):
    from conftest import assert_same
    from safetensors.torch import save_file
    src = _every_dtype()
    path = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in src.items()}, path)
    got = ember.sharded.load_weights_file(path, mmap=mmap)
    assert sorted(got) == sorted(src)
    ranges = _mapped(path)
    for k, v in src.items():
        assert_same(got[k], v, rtol=0, atol=0)
        if v.numel():
            assert any(lo <= got[k].data_ptr() < hi for lo, hi in ranges) == mmap, k
    got["f32"].add_(1)  # writable either way; the file keeps its bytes
    assert torch.equal(load_file(path)["f32"], src["f32"])


@pytest.mark.parametrize("safe", [True, False])
def test_sharded_folders_load_mapped(tmp_path, safe):
    model = _model()
    state = model.state_dict()
    save_torch_state_dict(state, tmp_path, max_shard_size="10KB", safe_serialization=safe)
    index = json.loads((tmp_path / ("model.safetensors.index.json" if safe else "pytorch_model.bin.index.json"))
                       .read_text())
    assert len(set(index["weight_map"].values())) > 1
    got = load_state_dict_from_index(tmp_path, mmap=True)
    for k, v in state.items():
        assert np.array_equal(got[k].numpy(), v.numpy())
        shard = tmp_path / index["weight_map"][k]
        assert any(lo <= got[k].data_ptr() < hi for lo, hi in _mapped(shard)), k
    fresh = _model()
    for p in fresh.parameters():
        p.data.zero_()
    assert load_sharded_checkpoint(fresh, tmp_path, mmap=True) == ([], [])
    for k, v in fresh.state_dict().items():
        assert np.array_equal(v.numpy(), state[k].numpy())
