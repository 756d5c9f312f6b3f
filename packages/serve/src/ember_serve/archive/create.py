"""Making an ``.emar`` archive (``ember-archive create`` and its Python form).

Members: ``MANIFEST.json`` (name, version, created, ember versions, handler, model file,
class and kwargs, the sha256 and size of every other member), ``config.json`` (a
ModelConfig), ``weights.safetensors``, the model file, the extra files (at the archive's
root under their base names, folders recursively) and ``example_input.npz``. The archive
is written to a temporary name beside the output and renamed.

In place of a model file and class, ``hf_folder`` packs a Hugging Face-style folder (what
ember-text's ``save_pretrained`` writes: ``config.json``, the tokenizer files, the
safetensors weights; a sentence-transformers folder with its module subfolders) under
``hf/``; the manifest names it (``"hf_folder": "hf"``) and the text handlers load the model
and tokenizer from it with ember-text.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import io
import json
import os
import shutil
import tempfile
import zipfile

import numpy as np

from ..config import ModelConfig
from ..handlers import BUILTIN_HANDLERS
from ._errors import ArchiveError
from ._members import FORMAT, FORMAT_VERSION, MANIFEST_NAME, check_member_name, sha256_hex
from .weights import read_weights_file, to_safetensors_bytes

__all__ = ["create_archive"]

_RESERVED = {MANIFEST_NAME, "config.json", "weights.safetensors", "example_input.npz"}
HF_PREFIX = "hf"


def _versions() -> dict:
    out = {}
    for dist in ("ember-core", "ember-serve"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _check_handler(handler: str, members: dict) -> None:
    if handler in BUILTIN_HANDLERS:
        return
    module, sep, cls = handler.partition(":")
    if not sep or not cls.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
        raise ArchiveError(f"handler {handler!r}: expected a built-in name ({', '.join(BUILTIN_HANDLERS)}) "
                           "or 'module:Class' for a module inside the archive")
    if module.replace(".", "/") + ".py" not in members:
        raise ArchiveError(f"handler {handler!r}: the archive holds no {module.replace('.', '/')}.py "
                           "(add it as the model file or with --extra-files)")


def _add_extra(members: dict, path: str) -> None:
    base = os.path.basename(os.path.normpath(path))
    if os.path.isdir(path):
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for fn in sorted(filenames):
                full = os.path.join(dirpath, fn)
                rel = "/".join([base, *os.path.relpath(full, path).split(os.sep)])
                _add_file(members, rel, full)
    elif os.path.isfile(path):
        _add_file(members, base, path)
    else:
        raise FileNotFoundError(f"extra file {path!r} does not exist")


def _add_hf_folder(members: dict, folder: str) -> None:
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"the Hugging Face folder {folder!r} does not exist")
    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise ArchiveError(f"{folder!r} holds no config.json: not a Hugging Face model folder (write one with "
                           "save_pretrained)")
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            if fn.startswith(".") or os.path.islink(full):
                continue  # hidden files (.gitattributes, lock files) and links are not part of a model
            rel = "/".join([HF_PREFIX, *os.path.relpath(full, folder).split(os.sep)])
            _add_file(members, rel, full)


def _add_file(members: dict, name: str, path: str) -> None:
    check_member_name(name)
    if name in members or name in _RESERVED:
        raise ArchiveError(f"two files would share the archive name {name!r}")
    with open(path, "rb") as f:
        members[name] = f.read()


def create_archive(output: str | os.PathLike, *, name: str, version: str = "1.0", handler: str,
                   model_file: str | None = None, model_class: str | None = None,
                   model_kwargs: dict | None = None, weights: str | None = None,
                   config: ModelConfig | dict | str | None = None, example_input: str | None = None,
                   extra_files: list[str] = (), hf_folder: str | None = None, force: bool = False) -> str:
    """Write an ``.emar`` archive and return its path.

    Args:
        output: the archive's path (``NAME.emar``), or a folder to write ``{name}.emar`` into.
        name, version: the model's name (letters, digits, ``._-``) and version string.
        handler: a built-in handler name (``tensor``, ``image_classifier``, ...) or
            ``module:Class`` naming a handler class in a module inside the archive.
        model_file, model_class, model_kwargs: the Python file defining the model, the class
            name in it and the keyword arguments of its constructor (JSON-serialisable).
        weights: a safetensors file or a torch checkpoint holding the state_dict.
        config: a ModelConfig, a dict of its fields, or the path of a JSON file.
        example_input: an ``.npz`` with one array per input; the model runs once on it and
            the input/output signature is written into the config.
        extra_files: files or folders added at the archive's root.
        hf_folder: a Hugging Face-style folder (config.json, tokenizer files, safetensors
            weights) packed under ``hf/`` in place of a model file, class and weights.
        force: overwrite an existing output.

    Raises ArchiveError (inconsistent arguments, unreadable weights, a failing example),
    FileNotFoundError (a missing file), FileExistsError (output exists and not ``force``)."""
    if not isinstance(name, str) or not name or not all(c.isalnum() or c in "._-" for c in name) \
            or name.startswith("."):
        raise ArchiveError(f"model name {name!r}: expected letters, digits, '.', '_' or '-'")
    if not isinstance(version, str) or not version or "/" in version or any(ord(c) < 33 for c in version):
        raise ArchiveError(f"model version {version!r}: expected a non-empty string without '/' or spaces")
    output = os.fspath(output)
    if os.path.isdir(output):
        output = os.path.join(output, f"{name}.emar")
    if os.path.exists(output) and not force:
        raise FileExistsError(f"{output!r} exists; pass force=True (--force) to overwrite it")
    if (model_file is None) != (model_class is None):
        raise ArchiveError("model_file and model_class go together: give both or neither")
    if hf_folder is not None and (model_file is not None or weights is not None):
        raise ArchiveError("hf_folder replaces model_file, model_class and weights: give the folder or those, "
                           "not both")
    if isinstance(config, str):
        with open(config, encoding="utf-8") as f:
            config = ModelConfig.from_json(f.read())
    elif isinstance(config, dict):
        config = ModelConfig.from_dict(config)
    config = config or ModelConfig()

    members: dict[str, bytes] = {}
    model_info = None
    if model_file is not None:
        if not model_file.endswith(".py") or not os.path.basename(model_file)[:-3].isidentifier():
            raise ArchiveError(f"the model file must be a .py file named like a Python module, got {model_file!r}")
        _add_file(members, os.path.basename(model_file), model_file)
        if not model_class.isidentifier():
            raise ArchiveError(f"model class {model_class!r} is not a Python name")
        kwargs = dict(model_kwargs or {})
        json.dumps(kwargs)  # TypeError here, not at load time, when they cannot be stored
        model_info = {"file": os.path.basename(model_file), "class": model_class, "kwargs": kwargs}
    if hf_folder is not None:
        _add_hf_folder(members, os.fspath(hf_folder))
    for extra in extra_files or ():
        if os.path.basename(os.path.normpath(extra)) == HF_PREFIX and hf_folder is not None:
            raise ArchiveError(f"the extra file {extra!r} would land in {HF_PREFIX}/, where the Hugging Face "
                               "folder goes")
        _add_extra(members, extra)
    _check_handler(handler, members)
    if weights is not None:
        if not os.path.isfile(weights):
            raise FileNotFoundError(f"weights file {weights!r} does not exist")
        members["weights.safetensors"] = to_safetensors_bytes(*read_weights_file(weights))
    if example_input is not None:
        with open(example_input, "rb") as f:
            members["example_input.npz"] = f.read()
        try:
            with np.load(io.BytesIO(members["example_input.npz"]), allow_pickle=False) as z:
                example = {k: z[k] for k in z.files}
        except (ValueError, OSError) as e:
            raise ArchiveError(f"the example input {example_input!r} is not an .npz of arrays: {e}") from None
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": name, "version": version,
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "ember": _versions(), "handler": handler, "model": model_info, "members": {}}
    if hf_folder is not None:
        manifest["hf_folder"] = HF_PREFIX

    if example_input is not None and model_info is not None:
        config = _with_signature(members, manifest, config, example)
    members["config.json"] = config.to_json().encode("utf-8")
    _write_zip(output, members, manifest)
    return output


def _with_signature(members: dict, manifest: dict, config: ModelConfig, example: dict) -> ModelConfig:
    # stage the members in a folder, load it as an archive, run the model once
    from .load import load_archive
    from .signature import run_signature
    staging = tempfile.mkdtemp(prefix="ember-archive-stage-")
    try:
        staged = dict(members, **{"config.json": config.to_json().encode("utf-8")})
        _write_folder(staging, staged, manifest)
        with load_archive(staging) as arch:
            model = arch.build_model()
            inputs, outputs = run_signature(model, example, batched=config.max_batch_size > 0)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    d = config.to_dict()
    d["inputs"], d["outputs"] = [s.to_dict() for s in inputs], [s.to_dict() for s in outputs]
    return ModelConfig.from_dict(d)


def _manifest_bytes(members: dict, manifest: dict) -> bytes:
    listed = {k: {"sha256": sha256_hex(v), "size": len(v)} for k, v in sorted(members.items())}
    manifest = dict(manifest, members=listed)
    return json.dumps(manifest, indent=2).encode("utf-8")


def _write_folder(root: str, members: dict, manifest: dict) -> None:
    for rel, data in members.items():
        target = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    with open(os.path.join(root, MANIFEST_NAME), "wb") as f:
        f.write(_manifest_bytes(members, manifest))


def _write_zip(output: str, members: dict, manifest: dict) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(prefix=".emar-", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MANIFEST_NAME, _manifest_bytes(members, manifest))
            for rel, data in sorted(members.items()):
                # weights barely compress; storing them keeps loading fast
                zf.writestr(rel, data, compress_type=zipfile.ZIP_STORED if rel.endswith(".safetensors") else None)
        os.replace(tmp, output)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
