"""Real PyTorch programs (tests/integration/programs/, written against torch, never edited
for ember) run through ``python -m ember.compat``; what they write is then checked, with
real torch and TensorBoard's reader where they can read it."""

import os
import re
import subprocess
import sys

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def _run(script, *args, env=None, timeout=600):
    out = subprocess.run([sys.executable, "-m", "ember.compat", os.path.join(PROGRAMS, script), *args],
                         capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_training_with_checkpoints_tensorboard_and_resume(tmp_path):
    first = _run("train_with_checkpoints.py", "--out", str(tmp_path), "--epochs", "3")
    accuracies = [float(a) for a in re.findall(r"accuracy ([0-9.]+)", first)]
    assert len(accuracies) == 3 and accuracies[-1] > 0.8  # three classes from two thresholds: learnable
    # the checkpoint is torch's format: real torch opens it with its safe loader
    state = torch.load(tmp_path / "last.pt", weights_only=True)
    assert state["epoch"] == 2 and sorted(state["model"]) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert state["optimizer"]["state"][0]["exp_avg"].shape == (32, 8)
    resumed = _run("train_with_checkpoints.py", "--out", str(tmp_path), "--epochs", "1")
    assert resumed.startswith("epoch 3 ")
    reader = EventAccumulator(str(tmp_path / "runs"))
    reader.Reload()
    losses = reader.Scalars("train/loss")
    assert [e.step for e in losses] == list(range(len(losses))) and len(losses) == 4 * 8
    assert [e.step for e in reader.Scalars("train/accuracy")] == [0, 1, 2, 3]
    assert losses[-1].value < losses[0].value


def test_a_ddp_ready_script_on_one_process(tmp_path):
    out = _run("ddp_ready.py", env={"OUT": str(tmp_path / "model.pt")})
    assert re.match(r"rank 0 of 1 on cpu: loss [0-9.]+, cuda False, memory 0$", out.strip()), out
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert sorted(state) == ["0.bias", "0.weight", "2.bias", "2.weight"]  # no DDP "module." prefix


def test_a_nanogpt_style_script_with_its_boilerplate():
    out = _run("nanogpt_style.py", env={"ITERS": "60"})
    first, last = (float(v) for v in re.search(r"loss ([0-9.]+) -> ([0-9.]+)", out).groups())
    assert last < first - 0.5, out  # a repeated sentence: 60 AdamW steps learn much of it
    assert "torch 2.13.0+ember." in out and "tf32 True" in out


def test_hogwild_training_with_torch_multiprocessing():
    """Two spawned processes train one shared model; the parent, which took no step itself,
    evaluates it: it learned only if the processes wrote into the parent's memory."""
    out = _run("hogwild.py", "--num-processes", "2", "--epochs", "5")
    assert "exit codes [0, 0]" in out
    before, after = (float(v) for v in re.search(r"accuracy ([0-9.]+) -> ([0-9.]+)", out).groups())
    assert after > 0.9 and after > before + 0.2, out  # XOR clusters: an untrained model is near chance


def test_per_sample_gradients_with_torch_func():
    # every op of the model has a batching rule: no per-example fallback warning
    out = _run("per_example_grads.py", env={"PYTHONWARNINGS": "error::UserWarning"})
    assert "('conv1.weight', (16, 8, 1, 3, 3))" in out and "('fc2.bias', (16, 10))" in out
    worst = float(re.search(r"max difference from the per-sample loop ([0-9.e+-]+)", out).group(1))
    assert worst < 1e-5, out
    assert "clipped norms <= 1: True" in out


def test_a_compiled_training_script_trains_as_eager():
    """torch.compile'd model and step, a compiled function with a graph break, explain and
    jit.trace: under ember the compiled run trains as the same script run eagerly
    (TORCH_COMPILE_DISABLE=1, which torch and ember both honour), to the accuracy real torch
    reaches."""
    compiled = _run("compiled_training.py")
    eager = _run("compiled_training.py", env={"TORCH_COMPILE_DISABLE": "1"})
    real = subprocess.run([sys.executable, os.path.join(PROGRAMS, "compiled_training.py")], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TORCH_COMPILE_DISABLE": "1"})
    assert real.returncode == 0, real.stderr[-3000:]

    def numbers(out):
        first, last = (float(v) for v in re.search(r"loss ([0-9.]+) -> ([0-9.]+)", out).groups())
        return first, last, float(re.search(r"accuracy ([0-9.]+)", out).group(1))

    ours, ours_eager, torch_eager = numbers(compiled), numbers(eager), numbers(real.stdout)
    assert ours[1] < ours[0] - 0.3 and ours[2] > 0.8, compiled
    for a, b in zip(ours, ours_eager):
        assert abs(a - b) < 1e-3
    # ember's random stream is not torch's, so real torch trains other numbers to the same result
    assert torch_eager[1] < torch_eager[0] - 0.3 and abs(ours[2] - torch_eager[2]) < 0.1
    assert "explain graphs 2 breaks 1" in compiled and "traced matches True" in compiled


def test_a_torch_onnx_export_script(tmp_path):
    """The file the script's torch.onnx.export wrote passes onnx's full check and computes in
    onnxruntime what the model computed in the script."""
    import numpy as np
    import onnx
    import onnxruntime
    out = _run("onnx_export.py", "--out", str(tmp_path))
    assert "in onnx export False" in out
    path = str(tmp_path / "net.onnx")
    onnx.checker.check_model(path, full_check=True)
    model = onnx.load(path)
    assert model.opset_import[0].version == 18
    assert [i.name for i in model.graph.input] == ["image"] and [o.name for o in model.graph.output] == ["log_probs"]
    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for sample, expected in (("sample", "expected"), ("other", "other_expected")):  # batch 3, then 5
        (got,) = sess.run(None, {"image": np.load(tmp_path / f"{sample}.npy")})
        np.testing.assert_allclose(got, np.load(tmp_path / f"{expected}.npy"), rtol=1e-5, atol=1e-5)


def test_a_torch_onnx_export_script_of_an_lstm(tmp_path):
    """An LSTM tagger's file (ONNX's LSTM operator, dynamic batch and sequence) computes in
    onnxruntime what the model computed in the script, at a second shape too."""
    import numpy as np
    import onnx
    import onnxruntime
    _run("onnx_export_lstm.py", "--out", str(tmp_path))
    path = str(tmp_path / "tagger.onnx")
    onnx.checker.check_model(path, full_check=True)
    assert [n.op_type for n in onnx.load(path).graph.node].count("LSTM") == 2
    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    for sample in ("sample", "other"):  # [2, 10], then [3, 17]
        (got,) = sess.run(None, {"tokens": np.load(tmp_path / f"{sample}.npy")})
        np.testing.assert_allclose(got, np.load(tmp_path / f"{sample}_expected.npy"), rtol=1e-5, atol=1e-5)
