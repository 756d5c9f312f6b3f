"""Summaries for TensorBoard's plugins beyond the core ones: hparams, pr_curves, mesh and
custom_scalars, built with the plugins' own protos and metadata helpers from the
``tensorboard`` package, laid out as torch.utils.tensorboard writes them."""

from __future__ import annotations

import json

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.custom_scalar import metadata as custom_scalar_metadata
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.mesh import metadata as mesh_metadata
from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
from tensorboard.plugins.pr_curve import metadata as pr_curve_metadata

from ._summary import to_numpy

__all__ = ["hparams", "pr_curve", "pr_curve_raw", "mesh", "custom_scalars"]

# ---- hparams ---------------------------------------------------------------------------


def _hparam(value):
    """(field of google.protobuf.Value, DataType name) of one hyperparameter value."""
    if isinstance(value, bool):  # before int: a bool is an int to Python
        return "bool_value", "DATA_TYPE_BOOL"
    if isinstance(value, (int, float)):
        return "number_value", "DATA_TYPE_FLOAT64"
    if isinstance(value, str):
        return "string_value", "DATA_TYPE_STRING"
    return None, None


def _plugin_summary(tag: str, **content) -> Summary:
    metadata = hparams_metadata.create_summary_metadata(plugin_data_pb2.HParamsPluginData(**content))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The three summaries of one hparams session: the experiment (hyperparameter and
    metric names), the session start (the values) and the session end (success).

    Values may be bool, int, float, str, None (left out) or a tensor (its first element).
    torch's own version writes a bool as the number 0 or 1 (its bool branch comes after
    the number one); ember writes it as TensorBoard's bool, as torch's docstring promises.

    Raises:
        TypeError: an argument is not a dict, or a discrete domain does not list values of
            its hyperparameter's type.
        ValueError: a value of another type.
    """
    for name, d in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict)):
        if not isinstance(d, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in domains.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for k, v in hparam_dict.items():
        if v is None:
            continue
        field, kind = _hparam(v)
        if field is None and hasattr(v, "detach"):
            field, kind, v = "number_value", "DATA_TYPE_FLOAT64", float(to_numpy(v).reshape(-1)[0])
        if field is None:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(start.hparams[k], field, v)
        domain = None
        if k in domains:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[k]])
        infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DataType.Value(kind), domain_discrete=domain))
    experiment = api_pb2.Experiment(hparam_infos=infos,
                                    metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k))
                                                  for k in metric_dict])
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (_plugin_summary(hparams_metadata.EXPERIMENT_TAG, experiment=experiment),
            _plugin_summary(hparams_metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _plugin_summary(hparams_metadata.SESSION_END_INFO_TAG, session_end_info=end))


# ---- precision-recall curves -------------------------------------------------------------

_MINIMUM_COUNT = 1e-7  # keeps precision and recall finite where a count is zero


def _float_tensor(data: np.ndarray) -> TensorProto:
    return TensorProto(dtype="DT_FLOAT", float_val=np.asarray(data, dtype=np.float64).reshape(-1).tolist(),
                       tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in data.shape]))


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    metadata = pr_curve_metadata.create_summary_metadata(display_name="", description="",
                                                         num_thresholds=num_thresholds)
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=_float_tensor(data))])


def pr_curve(tag: str, labels, predictions, num_thresholds: int = 127, weights=None) -> Summary:
    """The [6, num_thresholds] table of the pr_curves plugin: true/false positive and
    negative counts, precision and recall, at thresholds ``i / (num_thresholds - 1)``.

    A prediction counts as positive at every threshold up to its own, rounded down to a
    threshold; ``weights`` weigh each example (default 1). At most 127 thresholds, as torch.
    """
    num_thresholds = min(num_thresholds, 127)
    labels = to_numpy(labels).astype(np.float64)
    predictions = to_numpy(predictions)
    weights = 1.0 if weights is None else to_numpy(weights)
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    span = (0, num_thresholds - 1)
    tp_in, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=labels * weights)
    fp_in, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - labels) * weights)
    tp = np.cumsum(tp_in[::-1])[::-1]  # examples predicted at or above each threshold
    fp = np.cumsum(fp_in[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    data = np.stack((tp, fp, tn, fn, precision, recall))
    return _pr_summary(tag, data, num_thresholds)


def pr_curve_raw(tag: str, tp, fp, tn, fn, precision, recall, num_thresholds: int = 127) -> Summary:
    """The pr_curves table from counts computed elsewhere (each of length num_thresholds)."""
    data = np.stack([to_numpy(x) for x in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, min(num_thresholds, 127))


# ---- meshes and point clouds ------------------------------------------------------------

def mesh(tag: str, vertices, colors=None, faces=None, config_dict=None) -> Summary:
    """One summary value per part given (vertices, faces, colors: [B, N, 3] each) for the
    mesh plugin, tagged ``<tag>_VERTEX`` ..., with the Three.js ``config_dict`` as JSON."""
    config = json.dumps(config_dict, sort_keys=True) if config_dict is not None else "{}"
    parts = [(t, kind) for t, kind in ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if t is not None]
    components = mesh_metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for t, kind in parts:
        data = to_numpy(t)
        if data.ndim != 3:
            raise ValueError(f"mesh parts are [B, N, 3]; got a tensor of shape {list(data.shape)}")
        metadata = mesh_metadata.create_summary_metadata(tag, None, kind, components, data.shape, None,
                                                         json_config=config)
        values.append(Summary.Value(tag=mesh_metadata.get_instance_name(tag, kind), tensor=_float_tensor(data),
                                    metadata=metadata))
    return Summary(value=values)


# ---- custom scalar layouts ----------------------------------------------------------------

def custom_scalars(layout: dict) -> Summary:
    """The layout of the custom_scalars plugin: ``{category: {chart title: [kind, tags]}}``
    with kind "Multiline" (any number of tags) or "Margin" (value, lower, upper).

    Raises:
        AssertionError: a Margin chart without exactly three tags (torch's type).
    """
    categories = []
    for category, charts in layout.items():
        made = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                made.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                made.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=made))
    tensor = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                         tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag=custom_scalar_metadata.CONFIG_SUMMARY_TAG, tensor=tensor,
                                        metadata=custom_scalar_metadata.create_summary_metadata())])
