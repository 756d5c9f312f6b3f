"""Running PyTorch programs unmodified: the import alias, its launcher, and the version
object that version gates compare against (checked against torch's TorchVersion)."""

import importlib.metadata
import itertools
import operator
import os
import subprocess
import sys
import textwrap

import packaging.version
import pytest
from torch.torch_version import TorchVersion as TorchsVersion

import ember
import ember.compat
from ember.version import TorchVersion

VERSIONS = ["2.13.0+ember.0.1.0", "2.0", "2.13", "2.13.0", "2.13.1", "2.1.0a0", "2.13.0rc1", "2.13.0.dev20240101",
            "2.13.0.post1", "1.13.1+cu117", "2.13.0+cpu", "2.13.0+ember.0.2.0", "not a version"]


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge, operator.eq])
def test_version_compares_as_torchs(op):
    for a, b in itertools.product(VERSIONS, VERSIONS + [(2, 1), (2, 13, 0), (3,)]):
        results = []
        for cls in (TorchVersion, TorchsVersion):
            try:
                results.append(op(cls(a), b))
            except TypeError as e:
                results.append(type(e))
        assert results[0] == results[1], (a, op.__name__, b)


def test_version_reads_as_torchs_api_level_with_embers_own_as_local_label():
    v = ember.__version__
    assert isinstance(v, str) and v == f"2.13.0+ember.{importlib.metadata.version('ember-core')}"
    assert v >= "2.0" and v >= (2, 1) and v < "2.14" and not v < (2, 13)
    assert v != "2.13.0+ember.0.0.1" and not (v != v)
    assert packaging.version.parse(v) == packaging.version.parse(str(v))
    assert packaging.version.parse(v).release == (2, 13, 0) and v >= packaging.version.parse("2.1")
    assert ember.version.__version__ is v
    assert ember.version.cuda is None and ember.version.hip is None and ember.version.debug is False


def _run(args, cwd, **env):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


PROGRAM = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    import ember
    print("argv", sys.argv)
    print("main", __name__, __file__)
    print("same", torch is ember, nn is ember.nn, F is ember.nn.functional, torch.optim is ember.optim)
    print("gate", torch.__version__ >= "2.0")
    model = nn.Linear(3, 1)
    data = TensorDataset(torch.randn(8, 3), torch.randn(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in DataLoader(data, batch_size=4):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    print("trained", type(model.weight).__module__)
    if sys.argv[1:] == ["fail"]:
        def inner():
            raise ValueError("from the program")
        inner()
""")


def test_a_script_runs_with_torch_resolving_to_ember(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM)
    out = _run(["-m", "ember.compat", "train.py", "--lr", "0.1"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "argv ['train.py', '--lr', '0.1']" in out.stdout
    assert f"main __main__ {script}" in out.stdout
    assert "same True True True True" in out.stdout and "gate True" in out.stdout
    assert "trained ember.nn.parameter" in out.stdout


def test_a_failing_script_shows_its_own_traceback(tmp_path):
    (tmp_path / "train.py").write_text(PROGRAM)
    out = _run(["-m", "ember.compat", "train.py", "fail"], tmp_path)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{tmp_path / "train.py"}", line ')  # the program's frame comes first
    assert lines[-1] == "ValueError: from the program"
    assert "runpy" not in out.stderr and "compat" not in out.stderr


def test_a_module_runs_with_dash_m(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "job.py").write_text("import sys, torch\nprint(__name__, sys.argv[1:], torch.__name__)\n")
    out = _run(["-m", "ember.compat", "-m", "pkg.job", "a", "b"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "__main__ ['a', 'b'] ember"


def test_a_missing_package_names_the_distribution_to_install(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import ember.compat
        ember.compat.ALIASES["torchfake"] = ("ember_no_such_package", "ember-fake", "packages/fake")
        ember.compat.install()
        try:
            import torchfake.models
        except ModuleNotFoundError as e:
            print(e.name, "|", e)
        try:
            import torch.no_such_module
        except ModuleNotFoundError as e:
            print(e.name, "|", e)
    """))
    out = _run(["prog.py"], tmp_path)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == ("torchfake | No module named 'torchfake': under ember it is 'ember_no_such_package', from the "
                     "ember-fake distribution (pip install ember-fake, or ./packages/fake from ember's checkout)")
    assert second == "torch.no_such_module | No module named 'torch.no_such_module' (ember has no " \
                     "'ember.no_such_module')"


def test_nothing_is_aliased_unless_asked():
    import torch
    assert torch.__name__ == "torch" and not ember.compat.is_installed()
    assert hasattr(torch, "_C")  # the real one, beside ember in this process
    with pytest.raises(RuntimeError, match="'torch' is already imported from"):
        ember.compat.install()  # two different `torch` in one process would be worse than an error
    assert not ember.compat.is_installed()


def test_install_and_uninstall_in_a_fresh_process(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import sys
        import ember, ember.compat
        ember.compat.install()
        import torch.nn
        print(torch.nn is ember.nn, sys.modules["torch.nn"] is ember.nn)
        ember.compat.uninstall()
        print("torch" in sys.modules, "torch.nn" in sys.modules, "ember.nn" in sys.modules)
    """))
    out = _run(["prog.py"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False", "False", "True"]


def test_version_report(tmp_path):
    out = _run(["-m", "ember.compat", "--version"], tmp_path)
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == f"torch API 2.13.0 (torch.__version__ reads {ember.__version__})"
