"""ember.save / ember.load against torch.save / torch.load (both directions, both formats)."""

import collections
import io
import os
import pickle
import stat
import zipfile

import numpy as np
import pytest
import torch
from conftest import as_numpy, assert_same, ember_dtypes, tdtype, to_ember, to_torch

import ember
import ember.optim


def _torch_values(seed=0):
    """One tensor of every dtype, plus 0-d and empty tensors, made by torch."""
    g = torch.Generator().manual_seed(seed)
    out = collections.OrderedDict()
    for name in ember_dtypes:
        base = torch.randn(3, 4, generator=g) * 50
        out[name] = base > 0 if name == "bool" else base.to(tdtype(name))
    out["scalar"] = torch.tensor(2.5, dtype=torch.float64)
    out["empty"] = torch.zeros(0, 3)
    return out


def _shares_memory_torch(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _check_tree(e, t):
    """ember object ``e`` equals torch object ``t``: same containers, keys and tensors."""
    if isinstance(t, torch.Tensor):
        assert_same(e, t, rtol=0, atol=0)
        assert e.requires_grad == t.requires_grad
    elif isinstance(t, dict):
        assert type(e).__name__ == type(t).__name__ and list(e) == list(t)
        for k in t:
            _check_tree(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t)
        for a, b in zip(e, t):
            _check_tree(a, b)
    else:
        assert e == t


def test_every_dtype_ember_to_torch(tmp_path):
    tv = _torch_values()
    ev = collections.OrderedDict((k, to_ember(v)) for k, v in tv.items())
    path = tmp_path / "model.pt"
    ember.save(ev, path)
    loaded = torch.load(path, weights_only=True)
    assert isinstance(loaded, collections.OrderedDict)
    for k in tv:
        assert loaded[k].dtype == tv[k].dtype
        assert torch.equal(loaded[k], tv[k])
    assert zipfile.is_zipfile(path)
    names = zipfile.ZipFile(path).namelist()
    assert "model/data.pkl" in names and "model/byteorder" in names and "model/version" in names


@pytest.mark.parametrize("legacy", [False, True])
def test_every_dtype_torch_to_ember(tmp_path, legacy):
    tv = _torch_values(1)
    path = tmp_path / "t.pt"
    torch.save(tv, path, _use_new_zipfile_serialization=not legacy)
    loaded = ember.load(path)
    _check_tree(loaded, tv)


def _ember_tied():
    base = ember.tensor(np.arange(24, dtype=np.float32).reshape(4, 6))
    return {
        "w": base,
        "w_again": base,                  # two names, one tensor
        "wt": base.T,                     # non-contiguous view
        "rows": base[1:3],                # view with an offset
        "col": base[:, 2],                # strided view with an offset
        "other": ember.ones(3, dtype=ember.int64),
    }


def test_views_and_tied_ember_to_torch(tmp_path):
    ev = _ember_tied()
    ember.save(ev, tmp_path / "tied.pt")
    t = torch.load(tmp_path / "tied.pt", weights_only=True)
    for k, v in ev.items():
        assert torch.equal(t[k], to_torch(v))
        assert t[k].stride() == v.stride()
    assert t["w"] is t["w_again"]
    for k in ("wt", "rows", "col"):
        assert _shares_memory_torch(t["w"], t[k])
    assert not _shares_memory_torch(t["w"], t["other"])
    assert t["rows"].storage_offset() == 6 and t["col"].storage_offset() == 2
    t["w"][1, 2] = -1.0
    assert t["rows"][0, 2].item() == -1.0 and t["col"][1].item() == -1.0 and t["wt"][2, 1].item() == -1.0


@pytest.mark.parametrize("legacy", [False, True])
def test_views_and_tied_torch_to_ember(tmp_path, legacy):
    base = torch.arange(24.0).reshape(4, 6)
    tv = {"w": base, "w_again": base, "wt": base.t(), "rows": base[1:3], "col": base[:, 2],
          "emb": base[0], "other": torch.ones(2)}
    torch.save(tv, tmp_path / "t.pt", _use_new_zipfile_serialization=not legacy)
    e = ember.load(tmp_path / "t.pt")
    for k, v in tv.items():
        assert_same(e[k], v)
        assert e[k].stride() == v.stride()
    assert e["w"] is e["w_again"]
    for k in ("wt", "rows", "col", "emb"):
        assert np.shares_memory(e["w"]._data, e[k]._data)
    assert not np.shares_memory(e["w"]._data, e["other"]._data)
    e["w"][1, 2] = -1.0
    assert e["rows"][0, 2].item() == -1.0 and e["col"][1].item() == -1.0 and e["wt"][2, 1].item() == -1.0


def test_round_trip_ember_keeps_ties(tmp_path):
    ev = _ember_tied()
    ember.save(ev, tmp_path / "a.pt")
    e = ember.load(tmp_path / "a.pt")
    ember.save(e, tmp_path / "b.pt")
    t = torch.load(tmp_path / "b.pt", weights_only=True)
    assert all(_shares_memory_torch(t["w"], t[k]) for k in ("wt", "rows", "col"))
    assert len([n for n in zipfile.ZipFile(tmp_path / "b.pt").namelist() if "/data/" in n]) == 2


def _train_pair(steps=3):
    g = torch.Generator().manual_seed(0)
    W, b = torch.randn(3, 4, generator=g), torch.randn(3, generator=g)
    X = torch.randn(8, 4, generator=g)
    tw, tb = W.clone().requires_grad_(), b.clone().requires_grad_()
    ew, eb = to_ember(W, True), to_ember(b, True)
    topt = torch.optim.Adam([tw, tb], lr=0.1, amsgrad=True)
    eopt = ember.optim.Adam([ew, eb], lr=0.1, amsgrad=True)
    eX = to_ember(X)
    for _ in range(steps):
        for opt, loss in ((topt, lambda: ((X @ tw.T + tb) ** 2).mean()),
                          (eopt, lambda: ((eX @ ew.T + eb) ** 2).mean())):
            opt.zero_grad()
            loss().backward()
            opt.step()
    return (tw, tb, topt), (ew, eb, eopt)


def test_checkpoint_with_optimizer_ember_to_torch(tmp_path):
    (tw, tb, topt), (ew, eb, eopt) = _train_pair()
    ckpt = {"model": collections.OrderedDict(weight=ew.detach(), bias=eb.detach()),
            "optimizer": eopt.state_dict(), "epoch": 3}
    ember.save(ckpt, tmp_path / "ckpt.pt")
    t = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    assert t["epoch"] == 3
    ref = topt.state_dict()
    assert t["optimizer"]["param_groups"] == ref["param_groups"]
    assert set(t["optimizer"]["state"]) == set(ref["state"])
    for i, st in ref["state"].items():
        assert set(t["optimizer"]["state"][i]) == set(st)
        for k, v in st.items():
            assert t["optimizer"]["state"][i][k].dtype == v.dtype and t["optimizer"]["state"][i][k].shape == v.shape
            torch.testing.assert_close(t["optimizer"]["state"][i][k], v, rtol=1e-4, atol=1e-5)
    # torch resumes from the ember checkpoint
    w2, b2 = t["model"]["weight"].clone().requires_grad_(), t["model"]["bias"].clone().requires_grad_()
    opt2 = torch.optim.Adam([w2, b2])
    opt2.load_state_dict(t["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.state[w2]["step"].item() == 3


@pytest.mark.parametrize("legacy", [False, True])
def test_checkpoint_with_optimizer_torch_to_ember(tmp_path, legacy):
    (tw, tb, topt), (ew, eb, eopt) = _train_pair()
    ckpt = {"model": collections.OrderedDict(weight=tw.detach(), bias=tb.detach()),
            "optimizer": topt.state_dict(), "epoch": 3}
    torch.save(ckpt, tmp_path / "ckpt.pt", _use_new_zipfile_serialization=not legacy)
    e = ember.load(tmp_path / "ckpt.pt", map_location="cpu", weights_only=True)
    _check_tree(e, ckpt)
    ew2, eb2 = e["model"]["weight"].clone().requires_grad_(), e["model"]["bias"].clone().requires_grad_()
    opt = ember.optim.Adam([ew2, eb2])
    opt.load_state_dict(e["optimizer"])
    assert opt.state[ew2]["step"].dtype is ember.float32 and opt.state[ew2]["step"].item() == 3


def test_requires_grad_and_parameters(tmp_path):
    tv = {"p": torch.nn.Parameter(torch.ones(2)), "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
          "r": torch.zeros(2).requires_grad_()}
    torch.save(tv, tmp_path / "p.pt")
    e = ember.load(tmp_path / "p.pt")
    assert [e[k].requires_grad for k in tv] == [True, False, True]
    assert all(e[k].is_leaf for k in tv)
    ember.save(e, tmp_path / "q.pt")
    t = torch.load(tmp_path / "q.pt", weights_only=True)
    assert [t[k].requires_grad for k in tv] == [True, False, True]
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires_grad"):
        ember.save({"x": e["p"] * 2}, io.BytesIO())


def test_file_like_objects():
    tv = _torch_values(2)
    buf = io.BytesIO()
    torch.save(tv, buf)
    buf.seek(0)
    _check_tree(ember.load(buf), tv)
    out = io.BytesIO()
    ember.save(collections.OrderedDict((k, to_ember(v)) for k, v in tv.items()), out)
    out.seek(0)
    back = torch.load(out, weights_only=True)
    for k in tv:
        assert torch.equal(back[k], tv[k])


def test_map_location_forms(tmp_path):
    torch.save({"a": torch.arange(3.0)}, tmp_path / "m.pt")
    seen = []

    def fn(storage, location):
        seen.append(location)
        return storage
    for ml in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, fn, lambda s, loc: None):
        e = ember.load(tmp_path / "m.pt", map_location=ml)
        assert e["a"].device == ember.device("cpu") and e["a"].tolist() == [0.0, 1.0, 2.0]
    assert seen == ["cpu"]


class Custom:
    def __init__(self):
        self.x = 1


def test_restricted_unpickler_refuses_other_globals(tmp_path):
    torch.save({"obj": Custom(), "t": torch.ones(1)}, tmp_path / "c.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"test_serialization\.Custom"):
        ember.load(tmp_path / "c.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"test_serialization\.Custom"):
        ember.load(tmp_path / "c.pt", weights_only=True)
    # torch refuses it as well by default
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tmp_path / "c.pt")
    # a trusted file may be loaded with weights_only=False
    assert ember.load(tmp_path / "c.pt", weights_only=False)["obj"].x == 1
    torch.save({"f": os.system}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="system"):
        ember.load(tmp_path / "evil.pt")


@pytest.mark.parametrize("legacy", [False, True])
def test_truncated_or_corrupt_file_raises_runtime_error(tmp_path, legacy):
    path = tmp_path / "full.pt"
    torch.save(_torch_values(), path, _use_new_zipfile_serialization=not legacy)
    raw = path.read_bytes()
    for i, cut in enumerate((len(raw) // 2, len(raw) - 30, 10)):
        bad = tmp_path / f"bad{i}.pt"
        bad.write_bytes(raw[:cut])
        with pytest.raises(RuntimeError, match=f"bad{i}.pt"):
            ember.load(bad)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"this is not a checkpoint at all" * 4)
    with pytest.raises(RuntimeError, match="junk.pt"):
        ember.load(junk)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="empty.pt"):
        ember.load(empty)


def test_save_is_atomic(tmp_path):
    path = tmp_path / "keep.pt"
    ember.save({"a": ember.ones(2)}, path)
    before = path.read_bytes()
    with pytest.raises(pickle.PicklingError):
        ember.save({"a": ember.zeros(2), "bad": lambda: 0}, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.pt"]
    assert torch.load(path, weights_only=True)["a"].tolist() == [1.0, 1.0]


def test_legacy_writer_is_read_by_torch(tmp_path):
    ev = _ember_tied()
    ember.save(ev, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(tmp_path / "old.pt")
    t = torch.load(tmp_path / "old.pt", weights_only=True)
    for k, v in ev.items():
        assert torch.equal(t[k], to_torch(v))
    assert _shares_memory_torch(t["w"], t["col"])


def test_storage_records_are_aligned(tmp_path):
    ember.save({"a": ember.ones(5), "b": ember.ones(7, dtype=ember.float64)}, tmp_path / "al.pt")
    raw = (tmp_path / "al.pt").read_bytes()
    zf = zipfile.ZipFile(tmp_path / "al.pt")
    for info in zf.infolist():
        if "/data/" in info.filename:
            name_len = int.from_bytes(raw[info.header_offset + 26: info.header_offset + 28], "little")
            extra_len = int.from_bytes(raw[info.header_offset + 28: info.header_offset + 30], "little")
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0
    # torch can memory-map what ember wrote, which needs the alignment
    t = torch.load(tmp_path / "al.pt", weights_only=True, mmap=True)
    assert t["b"].dtype == torch.float64 and t["b"].tolist() == [1.0] * 7


def test_top_level_forwarding():
    assert ember.save is ember.serialization.save and ember.load is ember.serialization.load
    buf = io.BytesIO()
    ember.save([ember.tensor([1, 2, 3]), ("x", 2.5, None, True)], buf)
    buf.seek(0)
    out = torch.load(buf, weights_only=True)
    assert out[0].tolist() == [1, 2, 3] and out[0].dtype == torch.int64 and out[1] == ("x", 2.5, None, True)
    assert as_numpy(to_ember(out[0])).tolist() == [1, 2, 3]


@pytest.mark.parametrize("existing_mode", [None, 0o600, 0o640])
def test_file_mode_as_torch_gives(tmp_path, existing_mode):
    # torch opens the path for writing: a new file gets 0o666 less the umask, an old one keeps its mode
    old_umask = os.umask(0o022)
    try:
        modes = []
        for name, save in (("t.pt", torch.save), ("e.pt", ember.save)):
            path = tmp_path / name
            if existing_mode is not None:
                path.write_bytes(b"old")
                os.chmod(path, existing_mode)
            save({"w": torch.ones(2) if save is torch.save else ember.ones(2)}, path)
            modes.append(stat.S_IMODE(os.stat(path).st_mode))
    finally:
        os.umask(old_umask)
    assert modes[1] == modes[0]
    assert sorted(os.listdir(tmp_path)) == ["e.pt", "t.pt"]  # no temporary file left


def test_save_writes_through_a_symlink(tmp_path):
    for name, save, ones in (("t", torch.save, torch.ones), ("e", ember.save, ember.ones)):
        target, link = tmp_path / f"{name}_target.pt", tmp_path / f"{name}_link.pt"
        target.write_bytes(b"old")
        os.symlink(target, link)
        save({"w": ones(3)}, link)
        assert os.path.islink(link)
    assert ember.load(tmp_path / "e_target.pt")["w"].tolist() == [1.0, 1.0, 1.0]
    assert torch.load(tmp_path / "e_target.pt")["w"].tolist() == torch.load(tmp_path / "t_target.pt")["w"].tolist()


def _numpy_checkpoint(tmp_path):
    """What a program that saved a numpy array with torch.save wrote."""
    path = tmp_path / "with_numpy.pt"
    torch.save({"a": np.arange(3), "w": torch.ones(2)}, path)
    return path


def test_weights_only_switches_from_the_environment(tmp_path, monkeypatch):
    path = _numpy_checkpoint(tmp_path)
    for lib in (torch, ember):
        with pytest.raises(pickle.UnpicklingError):
            lib.load(path)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
            loaded = lib.load(path)
        assert loaded["a"].tolist() == [0, 1, 2] and loaded["w"].tolist() == [1.0, 1.0]
        with pytest.raises(pickle.UnpicklingError):  # an explicit weights_only wins over that switch
            lib.load(path, weights_only=True)
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "true")
    for lib in (torch, ember):
        with pytest.raises(pickle.UnpicklingError):  # and this one wins over weights_only=False
            lib.load(path, weights_only=False)


def test_safe_globals_context_allows_within_the_block_only(tmp_path):
    path = tmp_path / "linear.pt"
    ember.save(ember.nn.Linear(2, 3), path)
    with pytest.raises(pickle.UnpicklingError, match="Linear"):
        ember.load(path)
    before = ember.serialization.get_safe_globals()
    with ember.serialization.safe_globals([ember.nn.Linear]):
        assert ember.nn.Linear in ember.serialization.get_safe_globals()
        model = ember.load(path)
        assert isinstance(model, ember.nn.Linear) and model.weight.shape == (3, 2)
    assert ember.serialization.get_safe_globals() == before
    with pytest.raises(pickle.UnpicklingError, match="Linear"):
        ember.load(path)


def test_whole_module_round_trip_when_the_caller_trusts_the_file(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    path = tmp_path / "model.pt"
    ember.save(model, path)
    loaded = ember.load(path, weights_only=False)
    assert isinstance(loaded, ember.nn.Sequential) and repr(loaded) == repr(model)
    x = ember.randn(4, 2)
    assert loaded(x).tolist() == model(x).tolist()
