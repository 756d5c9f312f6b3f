"""SummaryWriter (torch.utils.tensorboard.SummaryWriter): summaries to event files."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

try:
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:  # the extra is not installed
    raise ImportError("ember.utils.tensorboard needs the 'tensorboard' package: pip install 'ember-core[tensorboard]'"
                      ) from e

from . import _plugins, _summary
from ._embedding import Projector

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Writes summaries to an event file in ``log_dir`` (default ``runs/<date>_<host><comment>``),
    as torch's does. Summaries are queued and written every ``flush_secs`` seconds, when
    ``max_queue`` are waiting, on ``flush()`` and on ``close()``; usable as a context manager.

    Images are [C, H, W] by default (``dataformats``), floats in [0, 1] or uint8 in [0, 255];
    ``add_images`` takes [N, C, H, W] and tiles them 8 to a row.

    ``comment`` is appended to the default ``log_dir``'s name; ``purge_step`` asks
    TensorBoard to drop the events an earlier run logged from that step on;
    ``filename_suffix`` ends the event file's name (torch.utils.tensorboard.SummaryWriter)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._writer = EventFileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
        self._scalar_writers: dict[str, EventFileWriter] = {}
        self._projector = None
        if purge_step is not None:  # tell TensorBoard to drop what an earlier run logged from that step on
            self._writer.add_event(Event(step=purge_step, file_version="brain.Event:2"))
        self._closed = False

    def get_logdir(self) -> str:
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None) -> None:
        if self._closed:
            raise RuntimeError("SummaryWriter was closed")
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        (writer or self._writer).add_event(event)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False) -> None:
        """One scalar (a number or a one-element tensor) at ``global_step``."""
        self._add(_summary.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Several scalars on one chart: each goes to its own run, ``<log_dir>/<main_tag>_<tag>``,
        under the tag ``main_tag``, as torch writes them."""
        walltime = time.time() if walltime is None else walltime
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(self.log_dir, main_tag.replace("/", "_") + "_" + tag)
            writer = self._scalar_writers.get(path)
            if writer is None:
                writer = self._scalar_writers[path] = EventFileWriter(path, self.max_queue, self.flush_secs,
                                                                      self.filename_suffix)
            self._add(_summary.scalar(main_tag, value), global_step, walltime, writer)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None) -> None:
        """The distribution of ``values``; ``bins`` as numpy.histogram takes it, or
        "tensorflow" for TensorFlow's exponential buckets (torch's default)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = _summary.TENSORFLOW_BINS
        self._add(_summary.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW") -> None:
        self._add(_summary.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW") -> None:
        images = _summary.to_numpy(img_tensor)
        dataformats = dataformats.upper()
        if "C" not in dataformats:  # NHW: one gray channel
            images, dataformats = images[:, None], "NCHW"
        images = images.transpose([dataformats.index(c) for c in "NCHW"])
        self._add(_summary.image(tag, _summary.grid(images), "CHW"), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """A matplotlib figure (or a list of them, tiled) rendered to an image."""
        import numpy as np

        figures = figure if isinstance(figure, list) else [figure]
        images = []
        for fig in figures:
            fig.canvas.draw()
            rgba = np.asarray(fig.canvas.buffer_rgba())
            images.append(rgba[..., :3].transpose(2, 0, 1))
            if close:
                import matplotlib.pyplot as plt
                plt.close(fig)
        image = images[0] if not isinstance(figure, list) else _summary.grid(np.stack(images))
        self._add(_summary.image(tag, image, "CHW"), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Text (Markdown) for TensorBoard's text plugin."""
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """One session of the hparams plugin: the hyperparameters (bool, int, float, str or a
        one-element tensor; None is left out) and the metrics, each metric also logged as a
        scalar, all in the sub-run ``<log_dir>/<run_name>`` (default: the current time).

        Raises:
            TypeError: ``hparam_dict`` or ``metric_dict`` is not a dict, or a discrete domain
                (``{name: [values]}``) is not a list of values of its hyperparameter's type.
            ValueError: a hyperparameter of another type.
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = _plugins.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        with SummaryWriter(log_dir=os.path.join(self.log_dir, run_name or str(time.time()))) as run:
            for summary in summaries:
                run._add(summary, global_step, None)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None) -> None:
        """Data for the embedding projector: ``mat`` [N, D] (one point per row), optional
        ``metadata`` (N labels, or N rows of ``metadata_header``'s columns) and ``label_img``
        [N, C, H, W] (floats in [0, 1]) tiled into a sprite; written under
        ``<log_dir>/<global_step:05d>/<tag>`` with ``projector_config.pbtxt`` beside.

        Raises:
            AssertionError: the counts of labels or images differ from N, ``mat`` is not 2-d,
                or the header's length differs from the metadata's columns (torch's type).
            NotADirectoryError: a file stands where the embedding's folder goes.
        """
        if self._projector is None:
            self._projector = Projector(self.log_dir)
        self._projector.add(mat, metadata, label_img, global_step, tag, metadata_header)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None) -> None:
        """A precision-recall curve of binary ``labels`` (0/1) against ``predictions`` in
        [0, 1], at ``num_thresholds`` (at most 127) evenly spaced thresholds."""
        self._add(_plugins.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None) -> None:
        """A precision-recall curve from counts, precisions and recalls computed elsewhere,
        each of length ``num_thresholds``; ``weights`` is accepted and unused, as in torch."""
        self._add(_plugins.pr_curve_raw(tag, true_positive_counts, false_positive_counts, true_negative_counts,
                                        false_negative_counts, precision, recall, num_thresholds),
                  global_step, walltime)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None) -> None:
        """A mesh or point cloud for the mesh plugin: ``vertices`` [B, N, 3], ``colors``
        [B, N, 3] (uint8 in [0, 255] or floats in [0, 1]), ``faces`` [B, F, 3] (vertex
        indices); ``config_dict`` holds Three.js camera, light and material settings."""
        self._add(_plugins.mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def add_custom_scalars(self, layout) -> None:
        """The custom_scalars plugin's charts of scalars logged under other tags:
        ``{category: {title: ["Multiline", [tags]] or ["Margin", [value, lower, upper]]}}``."""
        self._add(_plugins.custom_scalars(layout), None, None)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled") -> None:
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled") -> None:
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """The graph of ``model`` run on ``input_to_model`` (a tensor or a tuple of them), for
        TensorBoard's graph tab: the ops ``ember.jit.trace`` records, with their input and
        output shapes (see ``_graph``). ``use_strict_trace`` is accepted for torch's signature
        (ember's trace records containers either way)."""
        if self._closed:
            raise RuntimeError("SummaryWriter was closed")
        from tensorboard.compat.proto.event_pb2 import TaggedRunMetadata

        from ._graph import graph
        graph_def, stats = graph(model, input_to_model, verbose)
        self._writer.add_event(Event(graph_def=graph_def.SerializeToString(), wall_time=time.time()))
        tagged = TaggedRunMetadata(tag="step1", run_metadata=stats.SerializeToString())
        self._writer.add_event(Event(tagged_run_metadata=tagged, wall_time=time.time()))

    def flush(self) -> None:
        self._writer.flush()
        for writer in self._scalar_writers.values():
            writer.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._writer.close()
        for writer in self._scalar_writers.values():
            writer.close()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
