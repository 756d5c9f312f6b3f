"""Loopback load test of ember-serve: the demo's Fashion-MNIST CNN with batching on and off.

    python benchmarks/serve_load.py                    # 64 clients x 20 s per mode
    python benchmarks/serve_load.py --clients 16 --duration 5

A server process (``python -m ember_serve`` on 127.0.0.1) holds two archives of the demo's
CNN (random weights): ``b1`` (max_batch_size 0: one request per execution) and ``batched``
(max_batch_size 64, max_batch_delay_ms 5), one worker thread each. For each mode, ``--clients``
threads of this process each keep one HTTP/1.1 connection open and send Open Inference
Protocol requests of one image ``[1, 1, 28, 28]`` (FP32, binary tensor extension) back to back
for ``--duration`` seconds. Reported per mode: requests answered, throughput, p50/p99 latency,
errors (any answer but 200), the mean executed batch (from the server's Triton metrics), and
the CPU time per answered request of the server process and of this (client) process: on a
machine shared with other work the throughput moves with the load, the CPU per request much
less. Clients and server share the machine's cores. Nothing is asserted.

Concurrent generation: a second server holds a random 4-layer GPT-2 (n_embd 128, a byte-level
BPE tokenizer trained here) as ``gen1`` (max_batch_size 1: one sequence at a time) and ``gen8``
(iteration-level batching of up to 8 sequences); ``--gen-clients`` threads send greedy
``/v1/completions`` of ``--gen-tokens`` tokens back to back for ``--duration`` seconds. Reported:
completions, generated tokens per second, p50 latency, errors, and the mean sequences per
decoding step (``ember_batch_size``). ``--skip-generation`` leaves it out.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "fashion_mnist.py")


def build_archives(work: str) -> None:
    sys.path.insert(0, os.path.dirname(DEMO))
    from fashion_mnist import FashionCNN

    import ember
    from ember_serve import create_archive
    ember.manual_seed(0)
    weights = os.path.join(work, "w.pt")
    ember.save(FashionCNN().state_dict(), weights)
    example = os.path.join(work, "ex.npz")
    np.savez(example, images=np.zeros((2, 1, 28, 28), np.float32))
    for name, cfg in (("b1", {"max_batch_size": 0}), ("batched", {"max_batch_size": 64, "max_batch_delay_ms": 5})):
        cfg.update(queue_size=4096)
        create_archive(os.path.join(work, f"{name}.emar"), name=name, handler="tensor", model_file=DEMO,
                       model_class="FashionCNN", weights=weights, config=cfg,
                       example_input=example if cfg["max_batch_size"] else None)


def model_alone(sizes=(1, 4, 16, 64), seconds: float = 1.0) -> dict:
    """Rows per second of the demo CNN's forward (no_grad) at each batch size in this process:
    the most any server can get out of batching this model is the ratio of the best to size 1."""
    sys.path.insert(0, os.path.dirname(DEMO))
    from fashion_mnist import FashionCNN

    import ember
    ember.manual_seed(0)
    model = FashionCNN().eval()
    out = {}
    with ember.no_grad():
        for n in sizes:
            x = ember.from_numpy(np.random.default_rng(0).standard_normal((n, 1, 28, 28)).astype(np.float32))
            for _ in range(3):
                model(x)
            runs, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                model(x)
                runs += 1
            out[n] = n * runs / (time.perf_counter() - start)
    return out


def request_body(fixed_batch: bool) -> tuple[bytes, dict]:
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype(np.float32)
    header = json.dumps({"inputs": [{"name": "images" if fixed_batch else "input__0", "datatype": "FP32",
                                     "shape": [1, 1, 28, 28], "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    return header + x.tobytes(), {"Inference-Header-Content-Length": str(len(header)),
                                  "Content-Type": "application/octet-stream"}


def client_loop(host: str, port: int, path: str, body: bytes, headers: dict, deadline: float, out: list) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=60)
    lat, errors = [], 0
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body, headers)
            r = conn.getresponse()
            r.read()
            ok = r.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=60)
        if ok:
            lat.append(time.perf_counter() - t0)
        else:
            errors += 1
    conn.close()
    out.append((lat, errors))


def scrape(metrics_url: str, model: str) -> tuple[float, float]:
    from urllib.request import urlopen
    text = urlopen(metrics_url + "/metrics").read().decode()

    def value(name):
        m = re.search(rf'^{name}{{model="{model}",version="1.0"}} (\S+)$', text, re.M)
        return float(m.group(1)) if m else 0.0
    return value("nv_inference_count"), value("nv_inference_exec_count")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux's /proc; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_mode(urls: dict, model: str, clients: int, duration: float, server_pid: int = 0) -> dict:
    host, port = urls["inference"].split("//", 1)[1].rsplit(":", 1)
    body, headers = request_body(fixed_batch=model != "b1")
    rows0, execs0 = scrape(urls["metrics"], model)
    server0, client0 = process_cpu_s(server_pid), time.process_time()
    results: list = []
    deadline = time.perf_counter() + duration
    threads = [threading.Thread(target=client_loop, args=(host, int(port), f"/v2/models/{model}/infer", body,
                                                          headers, deadline, results)) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    server1, client1 = process_cpu_s(server_pid), time.process_time()
    lat = sorted(x for r in results for x in r[0])
    rows1, execs1 = scrape(urls["metrics"], model)
    answered = max(len(lat), 1)
    return {"mode": model, "requests": len(lat), "throughput": len(lat) / elapsed,
            "server_cpu_ms": 1e3 * (server1 - server0) / answered,
            "client_cpu_ms": 1e3 * (client1 - client0) / answered,
            "p50_ms": 1e3 * statistics.median(lat) if lat else float("nan"),
            "p99_ms": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else float("nan"),
            "errors": sum(r[1] for r in results),
            "mean_batch": (rows1 - rows0) / (execs1 - execs0) if execs1 > execs0 else float("nan")}


def server_env(args) -> dict:
    env = dict(os.environ)
    if args.blas_threads is not None:
        for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[key] = str(args.blas_threads)
    return env


def build_generation_archives(work: str) -> None:
    import ember
    import ember_text
    from ember_serve import create_archive
    from ember_text import models as M
    corpus = ["The quick brown fox jumps over the lazy dog.", "Serving models over sockets, one token at a time.",
              "A journey of a thousand miles begins with a single step!"] * 20
    tok = ember_text.train_byte_level_bpe(iterator=corpus, vocab_size=400, min_frequency=2,
                                          special_tokens=["<|endoftext|>"])
    ember.manual_seed(0)
    config = M.GPT2Config(n_layer=4, n_head=4, n_embd=128, n_positions=256, vocab_size=len(tok),
                          bos_token_id=None, eos_token_id=None)
    folder = os.path.join(work, "gpt2")
    M.GPT2LMHeadModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    for name, size in (("gen1", 1), ("gen8", 8)):
        create_archive(os.path.join(work, f"{name}.emar"), name=name, handler="text_generation", hf_folder=folder,
                       config={"max_batch_size": size, "queue_size": 4096})


def generation_loop(host, port, model, tokens, deadline, out) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=300)
    body = json.dumps({"model": model, "prompt": "The quick brown fox", "max_tokens": tokens,
                       "temperature": 0}).encode()
    lat, made, errors = [], 0, 0
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            answer = r.read()
            if r.status == 200:
                made += json.loads(answer)["usage"]["completion_tokens"]
                lat.append(time.perf_counter() - t0)
            else:
                errors += 1
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=300)
    conn.close()
    out.append((lat, made, errors))


def step_histogram(metrics_url: str, model: str) -> tuple[float, float]:
    from urllib.request import urlopen
    text = urlopen(metrics_url + "/metrics").read().decode()
    values = []
    for series in ("count", "sum"):
        m = re.search(rf'^ember_batch_size_{series}{{model="{model}",version="1.0"}} (\S+)$', text, re.M)
        values.append(float(m.group(1)) if m else 0.0)
    return values[0], values[1]


def run_generation(urls: dict, model: str, clients: int, tokens: int, duration: float) -> dict:
    host, port = urls["inference"].split("//", 1)[1].rsplit(":", 1)
    steps0, rows0 = step_histogram(urls["metrics"], model)
    results: list = []
    deadline = time.perf_counter() + duration
    threads = [threading.Thread(target=generation_loop, args=(host, int(port), model, tokens, deadline, results))
               for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    steps1, rows1 = step_histogram(urls["metrics"], model)
    lat = sorted(x for r in results for x in r[0])
    return {"mode": model, "completions": len(lat), "tokens_per_s": sum(r[1] for r in results) / elapsed,
            "p50_ms": 1e3 * statistics.median(lat) if lat else float("nan"), "errors": sum(r[2] for r in results),
            "mean_step": (rows1 - rows0) / (steps1 - steps0) if steps1 > steps0 else float("nan")}


def generation_rows(args) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="ember-serve-gen-") as work:
        build_generation_archives(work)
        proc = subprocess.Popen([sys.executable, "-m", "ember_serve", "--model-store", work, "--models",
                                 "gen1=gen1.emar", "gen8=gen8.emar", "--port", "0", "--management-port", "0",
                                 "--metrics-port", "0", "--log-level", "warning"], stdout=subprocess.PIPE, text=True,
                                env=server_env(args))
        try:
            line = proc.stdout.readline()
            if not line.startswith("ember-serve listening:"):
                raise SystemExit("the generation server did not start")
            urls = dict(x.split("=", 1) for x in line.split(":", 1)[1].split())
            rows = []
            for model in ("gen1", "gen8"):
                run_generation(urls, model, 2, 8, 1.0)  # warm up
                rows.append(run_generation(urls, model, args.gen_clients, args.gen_tokens, args.duration))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=64, help="concurrent client connections")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of load per mode")
    p.add_argument("--gen-clients", type=int, default=8, help="concurrent generation clients")
    p.add_argument("--gen-tokens", type=int, default=64, help="tokens per completion")
    p.add_argument("--skip-generation", action="store_true", help="leave out the generation modes")
    p.add_argument("--skip-images", action="store_true", help="leave out the image modes")
    p.add_argument("--blas-threads", type=int, default=None,
                   help="OPENBLAS/OMP/MKL_NUM_THREADS of the server processes (default: inherited)")
    args = p.parse_args(argv)
    if not args.skip_images:
        image_modes(args)
    if not args.skip_generation:
        rows = generation_rows(args)
        print()
        print(f"generation: {args.gen_clients} clients, greedy completions of {args.gen_tokens} tokens, "
              f"{args.duration:g} s per mode")
        print()
        print("| mode | completions | tokens/s | p50 (ms) | errors | mean sequences per step |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['mode']} | {r['completions']} | {r['tokens_per_s']:.0f} | {r['p50_ms']:.0f} | {r['errors']} "
                  f"| {r['mean_step']:.1f} |")
        print()
        print(f"iteration-level batching / one sequence at a time: "
              f"{rows[1]['tokens_per_s'] / max(rows[0]['tokens_per_s'], 1e-9):.2f}x tokens/s")
    return 0


def image_modes(args) -> None:
    # the model alone, in a process with the server's BLAS settings: the ceiling of batching's gain
    code = f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); " \
           "import serve_load; print(json.dumps(serve_load.model_alone()))"
    alone = {int(k): v for k, v in json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                                             text=True, check=True, env=server_env(args))
                                              .stdout.splitlines()[-1]).items()}
    with tempfile.TemporaryDirectory(prefix="ember-serve-load-") as work:
        build_archives(work)
        proc = subprocess.Popen([sys.executable, "-m", "ember_serve", "--model-store", work, "--models",
                                 "b1=b1.emar", "batched=batched.emar", "--port", "0", "--management-port", "0",
                                 "--metrics-port", "0", "--log-level", "warning"], stdout=subprocess.PIPE, text=True,
                                env=server_env(args))
        try:
            line = proc.stdout.readline()
            if not line.startswith("ember-serve listening:"):
                raise SystemExit("the server did not start")
            urls = dict(x.split("=", 1) for x in line.split(":", 1)[1].split())
            rows = []
            for model in ("b1", "batched"):
                run_mode(urls, model, min(args.clients, 8), 1.0)  # warm up: first calls, allocator
                rows.append(run_mode(urls, model, args.clients, args.duration, proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}; "
          f"{args.clients} clients x {args.duration:g} s per mode, one image per request, one worker per model")
    print()
    print("| mode | requests | throughput (req/s) | p50 (ms) | p99 (ms) | errors | mean batch "
          "| server CPU/request (ms) | client CPU/request (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['requests']} | {r['throughput']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} "
              f"| {r['errors']} | {r['mean_batch']:.1f} | {r['server_cpu_ms']:.2f} | {r['client_cpu_ms']:.2f} |")
    b1, batched = rows
    print()
    print("model alone (forward, no_grad, this machine, the server's BLAS threads): "
          + ", ".join(f"batch {n} {v:.0f} rows/s" for n, v in alone.items())
          + f"; the most batching can give: {max(alone.values()) / alone[1]:.2f}x")
    print(f"batching / batch size 1 throughput: {batched['throughput'] / max(b1['throughput'], 1e-9):.2f}x "
          "(goal: at least 3x, zero errors)")


if __name__ == "__main__":
    sys.exit(main())
