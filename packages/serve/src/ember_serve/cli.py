"""Console scripts: ``ember-archive create|check`` and ``ember-serve``.

``ember-archive create`` accepts torch-model-archiver's flags as aliases: ``--model-name``
(``--name``), ``--serialized-file`` (``--weights``), ``--export-path`` (a folder for
``NAME.emar``), ``--extra-files`` (comma-separated or repeated), ``--handler``. It refuses
``--requirements-file``: an archive never installs packages.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

__all__ = ["archive_main", "serve_main"]


def _split_extra(values) -> list[str]:
    out = []
    for v in values or []:
        out.extend(p for p in v.split(",") if p)
    return out


def _archive_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember-archive", description="Make and check ember model archives (.emar).")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("create", help="pack model code, weights, handler and config into NAME.emar")
    c.add_argument("--name", "--model-name", dest="name", required=True, help="the model's name")
    c.add_argument("--version", dest="version", default="1.0", help="the model's version string")
    c.add_argument("--model-file", help="the Python file defining the model class")
    c.add_argument("--model-class", help="the model class's name in the model file")
    c.add_argument("--model-kwargs", default=None, help="JSON object of the class's constructor arguments")
    c.add_argument("--weights", "--serialized-file", dest="weights", help="safetensors file or torch state_dict")
    c.add_argument("--handler", required=True, help="built-in handler name, or module:Class inside the archive")
    c.add_argument("--config", help="JSON file of serving settings (max_batch_size, workers, inputs...)")
    c.add_argument("--example-input", help=".npz with one array per input; writes the signature into the config")
    c.add_argument("--extra-files", action="append", help="files or folders to add (comma-separated or repeated)")
    c.add_argument("-o", "--output", help="the archive's path (default NAME.emar in --export-path or here)")
    c.add_argument("--export-path", help="folder to write NAME.emar into (torch-model-archiver's flag)")
    c.add_argument("-f", "--force", action="store_true", help="overwrite an existing archive")
    c.add_argument("--requirements-file", "-r", help=argparse.SUPPRESS)
    c.add_argument("--hf-folder", help="a Hugging Face-style folder (config.json, tokenizer files, safetensors "
                   "weights) packed in place of --model-file/--model-class/--weights (the text handlers)")
    k = sub.add_parser("check", help="load an archive, run its handler on its example batch")
    k.add_argument("archive", help="NAME.emar or an unpacked archive folder")
    return p


def _create(args) -> int:
    from .archive import create_archive
    if args.requirements_file:
        print("ember-archive: --requirements-file is refused: an archive never installs packages; install the "
              "model's dependencies into the server's environment instead", file=sys.stderr)
        return 2
    kwargs = None
    if args.model_kwargs:
        try:
            kwargs = json.loads(args.model_kwargs)
        except json.JSONDecodeError as e:
            print(f"ember-archive: --model-kwargs is not JSON: {e}", file=sys.stderr)
            return 2
        if not isinstance(kwargs, dict):
            print("ember-archive: --model-kwargs must be a JSON object", file=sys.stderr)
            return 2
    output = args.output or os.path.join(args.export_path or ".", f"{args.name}.emar")
    path = create_archive(output, name=args.name, version=args.version, handler=args.handler,
                          model_file=args.model_file, model_class=args.model_class, model_kwargs=kwargs,
                          weights=args.weights, config=args.config, example_input=args.example_input,
                          extra_files=_split_extra(args.extra_files), hf_folder=args.hf_folder,
                          force=args.force)
    print(path)
    return 0


def check_archive(path: str) -> tuple[bool, str]:
    """Load ``path``, run its handler on the example batch split into one request per row, and
    verify one answer per request, each holding the declared outputs. ``(ok, report)``."""
    from .archive import ArchiveError, load_archive
    from .handlers import HandlerContext, Request, resolve_handler
    with load_archive(path) as arch:
        example = arch.example_input()
        if example is None:
            raise ArchiveError(f"{path!r} has no example input (create it with --example-input)")
        handler = resolve_handler(arch.handler, arch)()
        handler.initialize(HandlerContext(arch, arch.config, arch.config.device, arch.name, arch.version))
        names = [s.name for s in arch.config.inputs] or list(example)
        arrays = list(example.values())
        n = arrays[0].shape[0] if arch.config.max_batch_size > 0 and arrays[0].ndim else 1
        requests = []
        for i in range(n):
            batched = n > 1 or arch.config.max_batch_size > 0
            inputs = {nm: (a[i:i + 1] if batched else a) for nm, a in zip(names, arrays)}
            r = Request(id=f"check-{i}", kind="infer", inputs=inputs)
            r.rows = handler.rows(r)
            requests.append(r)
        answers = handler.handle(requests)
        problems = []
        if len(answers) != len(requests):
            problems.append(f"{len(answers)} answers for {len(requests)} requests")
        want = [s.name for s in arch.config.outputs]
        for i, a in enumerate(answers):
            if not isinstance(a, dict):
                problems.append(f"answer {i} is {type(a).__name__}, not a dict of outputs")
            elif want and sorted(a) != sorted(want):
                problems.append(f"answer {i} has outputs {sorted(a)}, the config declares {sorted(want)}")
            else:
                for s in arch.config.outputs:
                    if not s.matches(a[s.name].shape):
                        problems.append(f"answer {i}: output {s.name!r} shape {list(a[s.name].shape)} "
                                        f"does not match {s.shape}")
        handler.close()
        if problems:
            return False, f"{arch.name} {arch.version}: FAILED: " + "; ".join(problems)
        return True, (f"{arch.name} {arch.version}: ok: handler {arch.handler!r} answered {len(requests)} "
                      f"request(s), one each")


def archive_main(argv=None) -> int:
    from .archive import ArchiveError
    args = _archive_parser().parse_args(argv)
    try:
        if args.command == "create":
            return _create(args)
        ok, report = check_archive(args.archive)
        print(report)
        return 0 if ok else 1
    except (ArchiveError, FileNotFoundError, FileExistsError, ValueError, TypeError) as e:
        print(f"ember-archive: {e}", file=sys.stderr)
        return 1


def _serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ember-serve", description="Serve ember model archives (Open Inference "
                                "Protocol v2, TorchServe-style routes, Prometheus metrics).")
    p.add_argument("--model-store", help="folder of .emar archives the management API may register, by name")
    p.add_argument("--models", nargs="*", default=[], metavar="NAME=FILE.emar",
                   help="archives to load at startup (FILE relative to --model-store, or a path)")
    p.add_argument("--host", default="127.0.0.1", help="address of the inference API")
    p.add_argument("--port", type=int, default=8080, help="port of the inference API (0: any free one)")
    p.add_argument("--management-host", default="127.0.0.1", help="address of the management API")
    p.add_argument("--management-port", type=int, default=8081)
    p.add_argument("--management-token", default=os.environ.get("EMBER_SERVE_TOKEN"),
                   help="Bearer token the management API requires (default $EMBER_SERVE_TOKEN); needed "
                        "when the management API listens beyond loopback")
    p.add_argument("--metrics-host", default=None, help="address of /metrics (default: --host)")
    p.add_argument("--metrics-port", type=int, default=8082)
    p.add_argument("--max-request-bytes", type=int, default=64 * 1024 * 1024,
                   help="largest request body for models whose config sets none")
    p.add_argument("--max-archive-bytes", type=int, default=4 * 1024 ** 3, help="largest unpacked archive")
    p.add_argument("--graceful-timeout", type=float, default=30.0,
                   help="seconds to wait for requests in flight on shutdown")
    p.add_argument("--model-control", default="none", choices=["none", "explicit"],
                   help="explicit: enable Triton's model repository extension (load/unload from the model store)")
    p.add_argument("--grpc-port", type=int, default=None,
                   help="port of the inference API over gRPC (the Open Inference Protocol's GRPCInferenceService; "
                        "0: any free one; default: no gRPC endpoint; needs the grpc extra)")
    p.add_argument("--grpc-host", default=None, help="address of the gRPC endpoint (default: --host)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    return p


def serve_main(argv=None) -> int:
    import logging
    args = _serve_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .server import Server, ServerOptions
    models = []
    for spec in args.models:
        name, sep, file = spec.partition("=")
        if not sep:
            name, file = "", spec
        path = file if os.path.isabs(file) or not args.model_store else os.path.join(args.model_store, file)
        if not os.path.exists(path) and os.path.exists(file):
            path = file
        models.append((name or None, path))
    options = ServerOptions(host=args.host, port=args.port, management_host=args.management_host,
                            management_port=args.management_port, metrics_host=args.metrics_host,
                            metrics_port=args.metrics_port, model_store=args.model_store, models=models,
                            management_token=args.management_token, max_request_bytes=args.max_request_bytes,
                            max_archive_bytes=args.max_archive_bytes, graceful_timeout_s=args.graceful_timeout,
                            model_control=args.model_control, log_level=args.log_level,
                            grpc_port=args.grpc_port, grpc_host=args.grpc_host)
    try:
        server = Server(options)
    except ValueError as e:
        print(f"ember-serve: {e}", file=sys.stderr)
        return 2
    return server.run()
