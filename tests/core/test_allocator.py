"""The allocator tuning applied at import: on by default on glibc, off with EMBER_MALLOC_TUNING=0."""

import os
import platform
import subprocess
import sys

import pytest


def _tuned(env_value):
    env = dict(os.environ)
    env.pop("EMBER_MALLOC_TUNING", None)
    if env_value is not None:
        env["EMBER_MALLOC_TUNING"] = env_value
    out = subprocess.run([sys.executable, "-c", "import ember; print(ember._allocator.TUNED)"],
                         capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_thresholds_set_on_glibc_unless_switched_off():
    assert _tuned(None) == "True"
    assert _tuned("0") == "False"
