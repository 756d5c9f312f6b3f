"""torch.fx programs (tests/integration/programs/fx_*.py, written against torch): each runs
once with real torch and once through ``python -m ember.compat``; what they print must be
the same, ember's module names read as torch's (generated code says ``ember.relu`` where
torch's says ``torch.relu``)."""

import os
import re
import subprocess
import sys

import pytest

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def _run(*command):
    out = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.parametrize("program", sorted(p for p in os.listdir(PROGRAMS) if p.startswith("fx_")))
def test_fx_program_prints_what_it_prints_under_torch(program):
    path = os.path.join(PROGRAMS, program)
    with_torch = _run(path)
    with_ember = _run("-m", "ember.compat", path)
    assert with_torch.strip()  # the program printed its results
    assert re.sub(r"\bember\b", "torch", with_ember) == with_torch
