"""The embedding projector's files, as torch.utils.tensorboard writes them: per embedding
a folder ``<step:05d>/<tag>`` holding tensors.tsv, metadata.tsv and sprite.png, and one
projector_config.pbtxt in the log folder listing every embedding written so far."""

from __future__ import annotations

import io
import math
import os

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

from ._summary import grid, to_numpy

__all__ = ["Projector"]


def _encode(tag: str) -> str:
    """A tag as one folder name: '%', '/' and '\\' as %25, %2f, %5c."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _write_tsv(path: str, metadata, header) -> None:
    if header:
        if len(header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [header] + list(metadata)]
    else:
        lines = [str(x) for x in metadata]
    with open(os.path.join(path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode())


def _write_sprite(path: str, images: np.ndarray) -> None:
    """[N, C, H, W] images (C 1 or 3, floats in [0, 1]) tiled ceil(sqrt(N)) to a row on a
    square canvas as wide as the tiling, scaled by 255 as torch does."""
    from PIL import Image

    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    tiled = grid(images, ncols=math.ceil(images.shape[0] ** 0.5)).transpose(1, 2, 0)  # [H, W, C]
    canvas = np.zeros((tiled.shape[1], tiled.shape[1], 3))
    canvas[:tiled.shape[0]] = tiled
    buffer = io.BytesIO()
    Image.fromarray(np.uint8((canvas * 255).clip(0, 255))).save(buffer, format="PNG")
    with open(os.path.join(path, "sprite.png"), "wb") as f:
        f.write(buffer.getvalue())


def _write_matrix(path: str, mat: np.ndarray) -> None:
    with open(os.path.join(path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(x.item()) for x in row) + "\n").encode())


class Projector:
    """The embeddings of one log folder; ``add`` writes one and rewrites the config."""

    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self.config = ProjectorConfig()

    def add(self, mat, metadata=None, label_img=None, global_step=None, tag="default", metadata_header=None):
        mat = to_numpy(mat)
        step = f"{0 if global_step is None else global_step:05d}"
        subdir = f"{step}/{_encode(tag)}"
        path = os.path.join(self.log_dir, subdir)
        if os.path.isdir(path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        elif os.path.exists(path):
            raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
        else:
            os.makedirs(path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _write_tsv(path, metadata, metadata_header)
        images = None if label_img is None else to_numpy(label_img)
        if images is not None:
            if mat.shape[0] != images.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write_sprite(path, images)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        _write_matrix(path, mat)
        info = EmbeddingInfo(tensor_name=f"{tag}:{step}", tensor_path=f"{subdir}/tensors.tsv")
        if metadata is not None:
            info.metadata_path = f"{subdir}/metadata.tsv"
        if images is not None:
            info.sprite.image_path = f"{subdir}/sprite.png"
            info.sprite.single_image_dim.extend([images.shape[3], images.shape[2]])
        self.config.embeddings.append(info)
        with open(os.path.join(self.log_dir, "projector_config.pbtxt"), "wb") as f:
            f.write(text_format.MessageToString(self.config).encode())
