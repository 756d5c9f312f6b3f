"""Archive the demo's Fashion-MNIST CNN, serve it, and query it with tritonclient and curl.

    python examples/fashion_mnist.py                      # train it first (saves fashion_mnist_cnn.pt)
    python examples/serve/serve_fashion_mnist.py --source-dir /usr/share/datasets/fashion-mnist

Needs ``pip install ./packages/core ./packages/vision "./packages/serve[vision]" "tritonclient[http]"``
and ``curl`` on the PATH. Without ``--weights`` (default ``fashion_mnist_cnn.pt``, what the demo
saves) the model gets random weights and its answers mean nothing; without the Fashion-MNIST
files under ``--data-dir`` (the demo's layout) the images are random noise.

What it does:
1. packs ``examples/fashion_mnist.py`` (the model class ``FashionCNN``) and the weights twice:
   ``fashion`` with the ``image_classifier`` handler (PNG in, top-3 categories out) and
   ``fashion_tensor`` with the ``tensor`` handler (``[N, 1, 28, 28]`` float32 in, logits out;
   its signature comes from ``--example-input``);
2. starts ``ember-serve`` on 127.0.0.1 (free ports) with both;
3. sends a batch of tensors with tritonclient (binary tensor extension), an image with curl to
   ``/predictions/fashion`` and the same image as BYTES through the Open Inference Protocol;
4. prints the answers and the server's Triton metrics, then stops the server (SIGTERM).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(os.path.dirname(HERE), "fashion_mnist.py")
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
MEAN, STD = 0.2860, 0.3530  # the demo's normalisation


def load_images(data_dir: str, n: int) -> tuple[np.ndarray, list[int] | None]:
    """``n`` test images ``[n, 28, 28]`` uint8 and their labels, or noise (labels None)."""
    try:
        import ember_vision
        ds = ember_vision.datasets.FashionMNIST(data_dir, train=False, download=False)
        return np.stack([np.asarray(ds[i][0]) for i in range(n)]), [int(ds[i][1]) for i in range(n)]
    except (RuntimeError, OSError, ImportError):
        print(f"(no Fashion-MNIST files under {data_dir!r}: using random images)")
        return np.random.default_rng(0).integers(0, 256, (n, 28, 28), dtype=np.uint8), None


def random_weights(path: str) -> None:
    sys.path.insert(0, os.path.dirname(DEMO))
    from fashion_mnist import FashionCNN

    import ember
    ember.manual_seed(0)
    ember.save(FashionCNN().state_dict(), path)


def build_archives(work: str, weights: str) -> list[str]:
    from ember_serve import create_archive
    common = dict(version="1", model_file=DEMO, model_class="FashionCNN", weights=weights, force=True)
    image = create_archive(os.path.join(work, "fashion.emar"), name="fashion", handler="image_classifier",
                           config={"max_batch_size": 32, "max_batch_delay_ms": 5,
                                   "handler_config": {"topk": 3, "categories": CLASSES,
                                                      "preprocess": {"grayscale": True, "mean": [MEAN],
                                                                     "std": [STD]}}}, **common)
    example = os.path.join(work, "example.npz")
    np.savez(example, images=np.zeros((2, 1, 28, 28), np.float32))
    tensor = create_archive(os.path.join(work, "fashion_tensor.emar"), name="fashion_tensor", handler="tensor",
                            example_input=example, config={"max_batch_size": 32, "max_batch_delay_ms": 5}, **common)
    return [image, tensor]


def start_server(store: str) -> tuple[subprocess.Popen, dict]:
    cmd = [sys.executable, "-m", "ember_serve", "--model-store", store, "--models", "fashion=fashion.emar",
           "fashion_tensor=fashion_tensor.emar", "--port", "0", "--management-port", "0", "--metrics-port", "0",
           "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "ember-serve listening: inference=... management=... metrics=..."
    if not line.startswith("ember-serve listening:"):
        proc.wait()
        raise SystemExit("the server did not start")
    return proc, dict(p.split("=", 1) for p in line.split(":", 1)[1].split())


def png(pixels: np.ndarray) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", default="fashion_mnist_cnn.pt", help="the demo's state_dict (random if missing)")
    p.add_argument("--data-dir", default="data", help="root holding FashionMNIST/raw (the demo's layout)")
    p.add_argument("--source-dir", default=None, help="folder with the original *-ubyte.gz files to copy from "
                   "(Debian's dataset-fashion-mnist: /usr/share/datasets/fashion-mnist)")
    p.add_argument("--images", type=int, default=4, help="how many test images to send")
    args = p.parse_args(argv)

    import tritonclient.http as httpclient

    work = tempfile.mkdtemp(prefix="ember-serve-example-")
    proc = None
    try:
        weights = args.weights
        if not os.path.isfile(weights):
            print(f"(no {weights!r}: the model gets random weights; train it with examples/fashion_mnist.py)")
            weights = os.path.join(work, "random.pt")
            random_weights(weights)
        for path in build_archives(work, weights):
            print(f"archived {path}")
        proc, urls = start_server(work)
        print(f"serving: {' '.join(f'{k}={v}' for k, v in urls.items())}")
        if args.source_dir:
            sys.path.insert(0, os.path.dirname(DEMO))
            from fashion_mnist import prepare_data
            prepare_data(args.data_dir, args.source_dir)
        images, labels = load_images(args.data_dir, args.images)

        # 1. tritonclient, binary tensors: the whole batch in one request
        client = httpclient.InferenceServerClient(urls["inference"].split("//", 1)[1])
        x = ((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None]
        inp = httpclient.InferInput("images", list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        logits = client.infer("fashion_tensor", [inp]).as_numpy("output__0")
        print("tritonclient fashion_tensor:", [CLASSES[i] for i in logits.argmax(1)],
              "labels:", [CLASSES[i] for i in labels] if labels else "n/a")

        # 2. curl: one PNG to the TorchServe-style route
        image_path = os.path.join(work, "image0.png")
        with open(image_path, "wb") as f:
            f.write(png(images[0]))
        curl = shutil.which("curl")
        if curl:
            out = subprocess.run([curl, "-s", "-X", "POST", "-H", "Content-Type: image/png", "--data-binary",
                                  f"@{image_path}", f"{urls['inference']}/predictions/fashion"],
                                 capture_output=True, text=True, check=True).stdout
            print("curl /predictions/fashion:", json.dumps(json.loads(out)))
        else:
            print("(curl not found: skipped the curl query)")

        # 3. tritonclient, the same image as BYTES through the image classifier
        inp = httpclient.InferInput("image", [1], "BYTES")
        inp.set_data_from_numpy(np.array([png(images[0])], dtype=object))
        top = client.infer("fashion", [inp]).as_numpy("topk")
        print("tritonclient fashion topk:", [s.decode() for s in top[0]])

        # 4. the metrics Triton's dashboards read
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
