"""The serving examples run end to end: archive, serve, tritonclient, openai and curl queries, metrics."""

import json
import os
import re
import shutil
import subprocess
import sys

import ember
import ember_text
from ember_serve.handlers.text_generation import DEFAULT_CHAT_STOP, DEFAULT_CHAT_TEMPLATE

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


def test_serve_gpt_chat_example(tmp_path):
    # no trained folder: the example trains a tiny GPT (kept in tiny/), serves it and streams a greedy chat
    tiny = tmp_path / "tiny"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "serve", "serve_gpt_chat.py"),
                        "--gpt-dir", str(tmp_path / "none"), "--tiny-dir", str(tiny), "--temperature", "0",
                        "--max-tokens", "16"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "no trained GPT in" in out and "train_gpt_fortunes.py --save-dir" in out
    assert re.search(r"^\$ ember-archive create .*--handler text_generation --hf-folder ", out, re.M)
    text = json.loads(re.search(r"^openai text: (.*)$", out, re.M).group(1))
    usage = re.search(r"^openai finish_reason: (\w+); usage: prompt (\d+), completion (\d+), pieces (\d+)$", out, re.M)
    assert usage and int(usage.group(4)) > 1  # streamed in pieces

    # the oracle: ember-text's generate on the saved folder, the messages rendered as the server does
    sys.path.insert(0, os.path.join(ROOT, "examples", "serve"))
    from serve_gpt_chat import MESSAGES
    tok = ember_text.AutoTokenizer.from_pretrained(str(tiny))
    model = ember_text.models.AutoModelForCausalLM.from_pretrained(str(tiny))
    prompt = tok.apply_chat_template(MESSAGES, chat_template=DEFAULT_CHAT_TEMPLATE, add_generation_prompt=True,
                                     tokenize=False)
    ids = list(tok(prompt, add_special_tokens=False)["input_ids"])
    new = model.generate(ember.tensor([ids], dtype=ember.int64), max_new_tokens=16)[0, len(ids):].tolist()
    want = tok.decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False).split(DEFAULT_CHAT_STOP)[0]
    assert text == want
    assert int(usage.group(2)) == len(ids)
    if DEFAULT_CHAT_STOP not in tok.decode(new):
        assert int(usage.group(3)) == len(new)
        assert usage.group(1) == ("length" if len(new) == 16 and new[-1] != tok.eos_token_id else "stop")

    assert shutil.which("curl"), "curl is needed (the serve session installs Debian's curl)"
    assert json.loads(re.search(r"^curl text: (.*)$", out, re.M).group(1)) == text
    assert re.search(r'^  data: \{"id":"chatcmpl-', out, re.M) and "  data: [DONE]" in out
    assert 'nv_inference_request_success{model="gpt",version="1"} 2' in out
    assert "server stopped (exit status 0)" in out
