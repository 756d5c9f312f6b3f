"""The module that owns numba: the switch, the cache folder, the thread pool, layouts."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.cpu import kernels
from ember.cpu.kernels import _runtime

SRC = os.path.dirname(os.path.dirname(os.path.dirname(ember.__file__)))


def run_python(code, unset=(), **env):
    full = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **env}
    for name in unset:
        full.pop(name, None)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_import_ember_does_not_import_numba():
    out = run_python("import sys, ember; ember.randn(3).exp(); print('numba' in sys.modules)").stdout
    assert out.strip() == "False"


def test_switch_off_runs_the_numpy_path_with_the_same_result():
    code = """
        import numpy as np, ember, ember.nn.functional as F
        from ember.cpu import kernels
        x = ember.tensor(np.linspace(-4, 4, 101, dtype=np.float32))
        print(kernels.enabled(), F.gelu(x).numpy().tolist())
    """
    off = run_python(code, EMBER_NUMBA="0").stdout.split(" ", 1)
    on = run_python(code, EMBER_NUMBA="1").stdout.split(" ", 1)
    assert (off[0], on[0]) == ("False", "True")
    np.testing.assert_allclose(eval(on[1]), eval(off[1]), rtol=2e-6, atol=1e-7)


def test_numba_that_cannot_be_imported_warns_once_and_the_ops_still_run():
    code = """
        import sys, warnings
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "numba" or name.startswith("numba."):
                    raise ImportError("numba blocked for the test")
        sys.meta_path.insert(0, Block())
        import ember, ember.nn.functional as F
        from ember.cpu import kernels
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = ember.linspace(-3, 3, 7)
            y1, y2 = F.gelu(x), F.silu(x)
            print(kernels.enabled(), len([w for w in caught if "numba" in str(w.message)]))
        print(y1.tolist())
    """
    lines = run_python(code, EMBER_NUMBA="1").stdout.splitlines()
    assert lines[0] == "False 1"
    x = torch.linspace(-3, 3, 7)
    np.testing.assert_allclose(eval(lines[1]), torch.nn.functional.gelu(x).tolist(), rtol=1e-6, atol=1e-6)


KERNEL_MODULE = """
from ember.cpu.kernels._runtime import jit

@jit
def twice(x, out):
    for i in range(x.size):
        out[i] = 2 * x[i]
"""


def _compile_in_subprocess(tmp_path, **env):
    (tmp_path / "probe_kernel.py").write_text(KERNEL_MODULE)
    code = """
        import numpy as np, probe_kernel
        out = np.empty(3)
        probe_kernel.twice(np.arange(3.0), out)
        assert out.tolist() == [0.0, 2.0, 4.0]
    """
    full_path = str(tmp_path) + os.pathsep + SRC
    run_python(code, PYTHONPATH=full_path, **env)


def _cache_files(root):
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.endswith((".nbi", ".nbc"))]


def test_cache_goes_under_ember_home(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        _compile_in_subprocess(tmp_path, EMBER_HOME=str(home))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    files = _cache_files(home / "numba")
    assert files, "no compiled kernel was cached under EMBER_HOME/numba"
    assert not _cache_files(tmp_path / "__pycache__")


def test_cache_honours_numba_cache_dir(tmp_path):
    user = tmp_path / "user-cache"
    _compile_in_subprocess(tmp_path, NUMBA_CACHE_DIR=str(user), EMBER_HOME=str(tmp_path / "home"))
    assert _cache_files(user)
    assert not _cache_files(tmp_path / "home")


def test_a_second_install_of_the_same_sources_loads_the_compiled_kernel(tmp_path):
    # with numba 0.68 or later; earlier ones (0.62 to 0.67 were tried) compile it again there
    # the same kernel module in two folders, as ember in two virtual environments
    code = """
        import numpy as np, probe_kernel
        out = np.empty(3)
        probe_kernel.twice(np.arange(3.0), out)
        stats = probe_kernel.twice.stats
        print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
    """
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["EMBER_HOME"] = str(tmp_path / "home")
    seen = []
    for install in ("venv-a", "venv-b"):
        folder = tmp_path / install / "kernels"
        folder.mkdir(parents=True)
        (folder / "probe_kernel.py").write_text(KERNEL_MODULE)
        env["PYTHONPATH"] = str(folder) + os.pathsep + SRC
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        seen.append(proc.stdout.split())
    # (hits, misses): the first compiles, the second only loads
    import numba
    loads = tuple(int(p) for p in numba.__version__.split(".")[:2]) >= (0, 68)
    assert seen == [["0", "1"], ["1", "0"] if loads else ["0", "1"]]


FEATURES_AFTER_ENABLE = """
    from ember.cpu import kernels
    kernels.enabled()
    import numba
    print(numba.core.config.CPU_FEATURES)
"""


def test_avx512_hosts_compile_with_512_bit_vectors():
    from llvmlite import binding
    host = binding.get_host_cpu_features()
    out = run_python(FEATURES_AFTER_ENABLE, unset=("NUMBA_CPU_FEATURES", "NUMBA_CPU_NAME"), EMBER_NUMBA="1").stdout
    expected = host.flatten() + ",-prefer-256-bit" if host.get("avx512f") else "None"
    assert out.strip() == expected


def test_a_users_cpu_features_win():
    out = run_python(FEATURES_AFTER_ENABLE, NUMBA_CPU_FEATURES="+sse2,+avx2", EMBER_NUMBA="1").stdout
    assert out.strip() == "+sse2,+avx2"


def test_parallel_for_covers_the_range_once_in_contiguous_parts(monkeypatch):
    monkeypatch.setattr(_runtime, "threads", lambda: 3)
    seen, lock = [], threading.Lock()

    def kernel(start, stop, out):
        with lock:
            seen.append((start, stop, threading.get_ident()))
        out[start:stop] += 1

    out = np.zeros(1000)
    kernels.parallel_for(kernel, 1000, out, work_per_item=1 << 12)
    assert (out == 1).all()
    parts = sorted(s[:2] for s in seen)
    assert len(parts) == 3 and parts[0][0] == 0 and parts[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    idents = {s[2] for s in seen}
    assert threading.get_ident() in idents and len(idents) >= 2  # the caller and the pool

    seen.clear()
    kernels.parallel_for(kernel, 10, out, work_per_item=1)  # too little work to split
    assert len(seen) == 1


def test_parallel_for_works_in_a_forked_child(monkeypatch):
    monkeypatch.setattr(_runtime, "threads", lambda: 2)
    out = np.zeros(100)

    def kernel(start, stop, out):
        out[start:stop] = 1

    kernels.parallel_for(kernel, 100, out, work_per_item=1 << 16)  # the parent's pool exists
    pid = os.fork()
    if pid == 0:  # child: a fresh pool, or this would wait forever on the parent's workers
        child = np.zeros(100)
        kernels.parallel_for(kernel, 100, child, work_per_item=1 << 16)
        os._exit(0 if child.sum() == 100 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_kernels_called_from_several_threads_at_once():
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((257, 301)).astype(np.float32) for _ in range(8)]
    images = [rng.standard_normal((2, 8, 19, 19)).astype(np.float32) for _ in range(8)]
    w = ember.tensor(rng.standard_normal((8, 8, 3, 3)).astype(np.float32))

    def work(a, img):
        x = ember.tensor(a, requires_grad=True)
        y = F.gelu(x) + F.softmax(x, -1) + F.layer_norm(x, (301,)) + F.silu(x)
        y.sum().backward()
        conv = F.conv2d(ember.tensor(img), w, padding=1)
        return y.detach().numpy(), x.grad.numpy(), conv.numpy()

    serial = [work(a, i) for a, i in zip(inputs, images)]
    results = [None] * 8

    def thread(k):
        for _ in range(3):
            results[k] = work(inputs[k], images[k])

    threads = [threading.Thread(target=thread, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, serial):
        for g, w_ in zip(got, want):
            np.testing.assert_array_equal(g, w_)


@pytest.mark.parametrize("make, dense", [
    (lambda a: a, True),
    (lambda a: a.transpose(0, 2, 3, 1), True),      # channels-last
    (lambda a: a.T, True),                           # Fortran order
    (lambda a: a[:, :, ::2], False),                 # gaps
    (lambda a: np.broadcast_to(a[:1], a.shape), False),
])
def test_flat_views_dense_arrays_in_any_layout(make, dense):
    a = make(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5))
    f, restore = kernels.flat(a)
    assert f.ndim == 1 and f.flags.c_contiguous and f.size == a.size
    assert np.shares_memory(f, a) == dense
    back = restore(f * 2)
    np.testing.assert_array_equal(back, a * 2)
    if dense:
        assert back.strides == a.strides
