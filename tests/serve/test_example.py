"""The serving example runs end to end: archive, serve, tritonclient and curl queries, metrics."""

import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_serve_fashion_mnist_example(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "serve", "serve_fashion_mnist.py"),
                        "--weights", str(tmp_path / "none.pt"), "--data-dir", str(tmp_path), "--images", "3"],
                       capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "the model gets random weights" in out
    assert re.search(r"^tritonclient fashion_tensor: \[('[^']+', ){2}'[^']+'\]", out, re.M)
    top = re.search(r"^tritonclient fashion topk: \['([0-9.]+):(\d+):([^']+)'", out, re.M)
    assert top
    assert shutil.which("curl"), "curl is needed (the serve session installs Debian's curl)"
    curl = json.loads(re.search(r"^curl /predictions/fashion: (.*)$", out, re.M).group(1))
    first = next(iter(curl))
    assert first == top.group(3) and abs(curl[first] - float(top.group(1))) < 1e-5  # same image, same answer
    assert 'nv_inference_count{model="fashion_tensor",version="1"} 3' in out
    assert "server stopped (exit status 0)" in out
