"""Archive the text example's GPT, serve it, and stream a chat completion with openai and curl.

    python examples/text/train_gpt_fortunes.py            # train it first (saves ./gpt_fortunes)
    python examples/serve/serve_gpt_chat.py --gpt-dir gpt_fortunes

Needs ``pip install ./packages/core ./packages/text "./packages/serve[text]" openai`` and ``curl``
on the PATH. Without the folder of ``--gpt-dir`` (default ``gpt_fortunes``, what the training
example saves) it says how to make it, then trains a tiny GPT on the fortunes in a few seconds
(Debian's ``fortunes`` package) and serves that instead: its answers are barely words, but every
step below runs. ``--tiny-dir`` keeps that tiny model's folder.

What it does:
1. packs the saved folder (``config.json``, the tokenizer files, ``model.safetensors``) with
   ``ember-archive create --hf-folder ... --handler text_generation``;
2. starts ``ember-serve`` on 127.0.0.1 (free ports) with it;
3. sends a streaming ``/v1/chat/completions`` with OpenAI's client, printing the pieces of text
   as they arrive, then the same request with curl, printing its server-sent event lines;
4. prints the server's Triton metrics, then stops the server (SIGTERM).

The tokenizer has no chat template, so the server renders the messages as ChatML. Sampling is
seeded (``--seed``; ``--temperature 0`` is greedy), so the two answers are the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(os.path.dirname(HERE), "text", "train_gpt_fortunes.py")
# a model small and quick enough to train in seconds on two cores (the real run takes minutes)
TINY = ["--steps", "120", "--max-fortunes", "3000", "--vocab-size", "500", "--samples", "0"]
MESSAGES = [{"role": "system", "content": "You answer with a fortune."},
            {"role": "user", "content": "Tell me my fortune."}]


def train_tiny(folder: str) -> None:
    sys.path.insert(0, os.path.dirname(TRAINER))
    from train_gpt_fortunes import main as train
    train([*TINY, "--save-dir", folder])


def archive(folder: str, work: str) -> str:
    """``ember-archive create --hf-folder``: the installed command, or the same entry point run here."""
    path = os.path.join(work, "gpt.emar")
    config = os.path.join(work, "config.json")
    with open(config, "w") as f:  # up to 4 chats decoded together; 48 new tokens by default
        json.dump({"max_batch_size": 4, "max_batch_delay_ms": 5, "handler_config": {"max_new_tokens": 48}}, f)
    args = ["create", "--name", "gpt", "--version", "1", "--handler", "text_generation", "--hf-folder", folder,
            "--config", config, "-o", path]
    print("$ ember-archive " + " ".join(args))
    command = shutil.which("ember-archive")
    cmd = [command] if command else [sys.executable, "-c", "import sys; from ember_serve.cli import archive_main; "
                                     "sys.exit(archive_main())"]
    subprocess.run(cmd + args, check=True)
    return path


def start_server(store: str) -> tuple[subprocess.Popen, dict]:
    cmd = [sys.executable, "-m", "ember_serve", "--model-store", store, "--models", "gpt=gpt.emar",
           "--port", "0", "--management-port", "0", "--metrics-port", "0", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "ember-serve listening: inference=... management=... metrics=..."
    if not line.startswith("ember-serve listening:"):
        proc.wait()
        raise SystemExit("the server did not start")
    return proc, dict(p.split("=", 1) for p in line.split(":", 1)[1].split())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpt-dir", default="gpt_fortunes", help="the folder train_gpt_fortunes.py saves")
    p.add_argument("--tiny-dir", default=None, help="where to keep the tiny GPT trained when --gpt-dir is missing "
                   "(default: a temporary folder)")
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.8, help="0: greedy")
    p.add_argument("--seed", type=int, default=0, help="the sampling seed of both requests")
    args = p.parse_args(argv)

    import openai

    work = tempfile.mkdtemp(prefix="ember-serve-gpt-")
    proc = None
    try:
        folder = args.gpt_dir
        if not os.path.isfile(os.path.join(folder, "config.json")):
            print(f"(no trained GPT in {folder!r}: make it with `python {os.path.relpath(TRAINER)} --save-dir "
                  f"{folder}`; training a tiny one now)")
            folder = args.tiny_dir or os.path.join(work, "gpt_tiny")
            train_tiny(folder)
        print(f"archived {archive(folder, work)}")
        proc, urls = start_server(work)
        print(f"serving: {' '.join(f'{k}={v}' for k, v in urls.items())}")
        request = {"model": "gpt", "messages": MESSAGES, "max_tokens": args.max_tokens,
                   "temperature": args.temperature, "seed": args.seed}

        # 1. OpenAI's client: the pieces are printed as the server sends them
        client = openai.OpenAI(base_url=urls["inference"] + "/v1", api_key="unused", max_retries=0, timeout=120)
        pieces, reason, usage = [], None, None
        print("openai stream: ", end="", flush=True)
        for chunk in client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True}):
            usage = chunk.usage or usage
            for choice in chunk.choices:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                    print(choice.delta.content, end="", flush=True)
                reason = choice.finish_reason or reason
        print()
        print(f"openai text: {json.dumps(''.join(pieces))}")
        print(f"openai finish_reason: {reason}; usage: prompt {usage.prompt_tokens}, "
              f"completion {usage.completion_tokens}, pieces {len(pieces)}")

        # 2. curl: the raw server-sent events (-N: print each as it arrives)
        curl = shutil.which("curl")
        if curl:
            out = subprocess.run([curl, "-sN", "-X", "POST", "-H", "Content-Type: application/json", "-d",
                                  json.dumps({**request, "stream": True}), f"{urls['inference']}/v1/chat/completions"],
                                 capture_output=True, text=True, check=True).stdout
            events = [line for line in out.splitlines() if line]
            print("curl /v1/chat/completions (server-sent events):")
            for line in events:
                print("  " + line)
            text = "".join(json.loads(e[6:])["choices"][0]["delta"].get("content") or ""
                           for e in events if e.startswith("data: {"))
            print(f"curl text: {json.dumps(text)}")
        else:
            print("(curl not found: skipped the curl query)")

        # 3. the metrics: each decoding step is one execution, each token one inference
        from urllib.request import urlopen
        with urlopen(urls["metrics"] + "/metrics") as r:
            metrics = r.read().decode()
        print("metrics:")
        for line in metrics.splitlines():
            if line.startswith(("nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count")):
                print("  " + line)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
            print(f"server stopped (exit status {proc.returncode})")
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
