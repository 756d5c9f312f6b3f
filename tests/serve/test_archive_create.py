"""Creating archives: members, manifest hashes, weights as safetensors, signatures, CLI aliases."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import safetensors.torch
import torch
from conftest import FASHION_MODEL, LINEAR_MODEL, make_linear_archive, torch_linear_state, write
from safetensors import safe_open

import ember
from ember_serve import ArchiveError, create_archive, load_archive
from ember_serve.cli import archive_main


def test_members_and_manifest_hashes(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("MANIFEST.json"))
        assert names == {"MANIFEST.json", "config.json", "weights.safetensors", "model_lin_1.py", "example_input.npz"}
        assert set(manifest["members"]) == names - {"MANIFEST.json"}
        for name, info in manifest["members"].items():
            data = zf.read(name)
            assert info == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert manifest["name"] == "lin" and manifest["version"] == "1" and manifest["handler"] == "tensor"
    assert manifest["model"] == {"file": "model_lin_1.py", "class": "Net", "kwargs": {}}
    assert manifest["ember"] == {"ember-core": "0.1.0", "ember-serve": "0.1.0"}
    assert manifest["created"].endswith("+00:00")


def test_torch_checkpoint_becomes_safetensors_with_same_values(tmp_path):
    path, state = make_linear_archive(tmp_path)
    with zipfile.ZipFile(path) as zf:
        (tmp_path / "w.safetensors").write_bytes(zf.read("weights.safetensors"))
    loaded = safetensors.torch.load_file(str(tmp_path / "w.safetensors"))
    assert set(loaded) == set(state)
    for k in state:
        torch.testing.assert_close(loaded[k], state[k], rtol=0, atol=0)


def test_model_runs_like_torch(tmp_path):
    path, state = make_linear_archive(tmp_path)
    x = np.random.default_rng(3).random((5, 4), dtype=np.float32)
    tl = torch.nn.Linear(4, 3)
    tl.load_state_dict({k[3:]: v for k, v in state.items()})
    with load_archive(path) as arch:
        model = arch.build_model()
        got = model(ember.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, tl(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_tied_weights_stored_once_as_safetensors_save_model_does(tmp_path):
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3)
            self.out = torch.nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight

    torch.manual_seed(0)
    tm = Tied()
    torch.save(tm.state_dict(), tmp_path / "tied.pt")
    safetensors.torch.save_model(tm, str(tmp_path / "ref.safetensors"))
    write(tmp_path / "tied.py", "from ember import nn\n\n\nclass Tied(nn.Module):\n    def __init__(self):\n"
          "        super().__init__()\n        self.emb = nn.Embedding(5, 3)\n"
          "        self.out = nn.Linear(3, 5, bias=False)\n        self.out.weight = self.emb.weight\n")
    path = create_archive(tmp_path / "t.emar", name="tied", handler="tensor", model_file=str(tmp_path / "tied.py"),
                          model_class="Tied", weights=str(tmp_path / "tied.pt"))
    with zipfile.ZipFile(path) as zf:
        (tmp_path / "ours.safetensors").write_bytes(zf.read("weights.safetensors"))
    with safe_open(str(tmp_path / "ours.safetensors"), "pt") as a, safe_open(str(tmp_path / "ref.safetensors"),
                                                                           "pt") as b:
        assert sorted(a.keys()) == sorted(b.keys())
        assert a.metadata() == b.metadata()
    with load_archive(path) as arch:
        state = arch.state_dict()
        assert set(state) == {"emb.weight", "out.weight"}
        model = arch.build_model()
        np.testing.assert_array_equal(model.out.weight.detach().numpy(), tm.emb.weight.detach().numpy())


def test_safetensors_weights_and_kwargs(tmp_path):
    torch.manual_seed(1)
    lin = torch.nn.Linear(6, 2)
    safetensors.torch.save_file({f"fc.{k}": v.contiguous() for k, v in lin.state_dict().items()},
                                str(tmp_path / "w.safetensors"))
    write(tmp_path / "model.py", LINEAR_MODEL)
    path = create_archive(tmp_path / "k.emar", name="k", handler="tensor", model_file=str(tmp_path / "model.py"),
                          model_class="Net", model_kwargs={"n_in": 6, "n_out": 2},
                          weights=str(tmp_path / "w.safetensors"))
    with load_archive(path) as arch:
        m = arch.build_model()
        x = np.ones((1, 6), np.float32)
        np.testing.assert_allclose(m(ember.from_numpy(x)).detach().numpy(),
                                   lin(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_example_input_writes_signature(tmp_path):
    write(tmp_path / "fashion.py", FASHION_MODEL)
    torch.manual_seed(0)
    np.savez(tmp_path / "ex.npz", images=np.zeros((3, 1, 28, 28), np.float32))
    path = create_archive(tmp_path / "f.emar", name="fashion", handler="tensor",
                          model_file=str(tmp_path / "fashion.py"), model_class="FashionCNN",
                          example_input=str(tmp_path / "ex.npz"), config={"max_batch_size": 16})
    with load_archive(path) as arch:
        assert [s.to_dict() for s in arch.config.inputs] == [{"name": "images", "datatype": "FP32",
                                                              "shape": [-1, 1, 28, 28]}]
        assert [s.to_dict() for s in arch.config.outputs] == [{"name": "output__0", "datatype": "FP32",
                                                               "shape": [-1, 10]}]
        assert arch.config.max_batch_size == 16
        np.testing.assert_array_equal(arch.example_input()["images"], np.zeros((3, 1, 28, 28), np.float32))


def test_example_without_batching_keeps_every_dimension(tmp_path):
    path, _ = make_linear_archive(tmp_path, config={"max_batch_size": 0})
    with load_archive(path) as arch:
        assert arch.config.inputs[0].shape == [2, 4] and arch.config.outputs[0].shape == [2, 3]


def test_failing_example_is_reported(tmp_path):
    write(tmp_path / "model.py", LINEAR_MODEL)
    np.savez(tmp_path / "ex.npz", np.zeros((2, 5), np.float32))
    with pytest.raises(ArchiveError, match="the model failed on the example input"):
        create_archive(tmp_path / "x.emar", name="x", handler="tensor", model_file=str(tmp_path / "model.py"),
                       model_class="Net", example_input=str(tmp_path / "ex.npz"))
    assert not os.path.exists(tmp_path / "x.emar")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"name": "../evil"}, ArchiveError, "model name"),
    ({"handler": "nosuch"}, ArchiveError, "expected a built-in name"),
    ({"handler": "missing_mod:Handler"}, ArchiveError, "holds no missing_mod.py"),
    ({"model_class": None}, ArchiveError, "go together"),
    ({"weights": "nope.pt"}, FileNotFoundError, "does not exist"),
    ({"model_file": "my-model.py"}, ArchiveError, "named like a Python module"),
])
def test_bad_arguments(tmp_path, kwargs, error, message):
    write(tmp_path / "model.py", LINEAR_MODEL)
    args = dict(name="m", handler="tensor", model_file=str(tmp_path / "model.py"), model_class="Net")
    args.update(kwargs)
    with pytest.raises(error, match=message):
        create_archive(tmp_path / "o.emar", **args)


def test_checkpoint_that_is_not_a_state_dict(tmp_path):
    write(tmp_path / "model.py", LINEAR_MODEL)
    torch.save({"epoch": 3, "state": {"w": torch.ones(2)}}, tmp_path / "ckpt.pt")
    with pytest.raises(ArchiveError, match="must hold a state_dict"):
        create_archive(tmp_path / "o.emar", name="m", handler="tensor", model_file=str(tmp_path / "model.py"),
                       model_class="Net", weights=str(tmp_path / "ckpt.pt"))


def test_existing_output_needs_force(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    with pytest.raises(FileExistsError):
        make_linear_archive(tmp_path)
    write(tmp_path / "model.py", LINEAR_MODEL)
    create_archive(path, name="lin", version="1", handler="tensor", model_file=str(tmp_path / "model.py"),
                   model_class="Net", force=True)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]


def test_cli_accepts_torch_model_archiver_flags(tmp_path, capsys):
    write(tmp_path / "model.py", LINEAR_MODEL)
    torch.save(torch_linear_state(), tmp_path / "w.pt")
    write(tmp_path / "index_to_name.json", json.dumps({"0": "a", "1": "b", "2": "c"}))
    (tmp_path / "assets").mkdir()
    write(tmp_path / "assets" / "note.txt", "hello")
    out = tmp_path / "out"
    out.mkdir()
    rc = archive_main(["create", "--model-name", "tm", "--version", "2.0", "--model-file", str(tmp_path / "model.py"),
                       "--model-class", "Net", "--serialized-file", str(tmp_path / "w.pt"), "--handler", "tensor",
                       "--extra-files", f"{tmp_path / 'index_to_name.json'},{tmp_path / 'assets'}",
                       "--export-path", str(out)])
    assert rc == 0
    assert capsys.readouterr().out.strip() == str(out / "tm.emar")
    with zipfile.ZipFile(out / "tm.emar") as zf:
        assert {"index_to_name.json", "assets/note.txt", "weights.safetensors"} <= set(zf.namelist())
        assert json.loads(zf.read("MANIFEST.json"))["version"] == "2.0"


def test_cli_refuses_requirements_file(tmp_path, capsys):
    write(tmp_path / "model.py", LINEAR_MODEL)
    write(tmp_path / "requirements.txt", "numpy\n")
    rc = archive_main(["create", "--name", "m", "--model-file", str(tmp_path / "model.py"), "--model-class", "Net",
                       "--handler", "tensor", "--requirements-file", str(tmp_path / "requirements.txt"),
                       "-o", str(tmp_path / "m.emar")])
    assert rc == 2
    assert "never installs packages" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "m.emar")


def test_console_script_runs(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    exe = os.path.join(os.path.dirname(sys.executable), "ember-archive")
    r = subprocess.run([exe, "check", path], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "lin 1: ok: handler 'tensor' answered 2 request(s), one each"
