"""SummaryWriter: what it writes, read back with TensorBoard's own event reader and from a
real ``tensorboard`` server on loopback, compared with what torch's SummaryWriter writes."""

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import matplotlib
import numpy as np
import pytest
import torch
import torch.utils.tensorboard
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import ember
from ember.utils.tensorboard import SummaryWriter

matplotlib.use("Agg")

RNG = np.random.default_rng(0)
VALUES = RNG.standard_normal(2000).astype(np.float32)
IMAGE = RNG.random((3, 10, 12)).astype(np.float32)
IMAGES = (RNG.random((11, 1, 6, 5)) * 255).astype(np.uint8)


def _figure():
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1, 2], [1, 0, 1])
    return fig


def _log(lib, writer_cls, log_dir):
    as_tensor = (lambda a: torch.from_numpy(a.copy())) if lib is torch else (lambda a: ember.tensor(a))
    with writer_cls(log_dir) as w:
        for step in range(4):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("acc", as_tensor(np.array(step / 4, dtype=np.float32)), step)
        w.add_scalars("lr", {"group0": 0.1, "group1": 0.01}, 0)
        w.add_histogram("weights", as_tensor(VALUES), 0)
        w.add_histogram("weights_auto", as_tensor(VALUES), 1, bins="auto", max_bins=7)
        w.add_image("image", as_tensor(IMAGE), 0)
        w.add_image("image_hwc", as_tensor(IMAGE.transpose(1, 2, 0)), 0, dataformats="HWC")
        w.add_images("batch", as_tensor(IMAGES), 0)
        w.add_figure("figure", _figure(), 0)
        w.add_text("note", "**ember** wrote this", 2)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb")
    _log(torch, torch.utils.tensorboard.SummaryWriter, str(root / "torch"))
    _log(ember, SummaryWriter, str(root / "ember"))
    readers = {}
    for name in ("torch", "ember"):
        reader = EventAccumulator(str(root / name), size_guidance={"images": 0, "histograms": 0, "tensors": 0})
        reader.Reload()
        readers[name] = reader
    return root, readers


def test_same_tags_and_runs(logs):
    root, r = logs
    assert r["ember"].Tags() == r["torch"].Tags()
    runs = {name: sorted(d for d in os.listdir(root / name) if os.path.isdir(root / name / d))
            for name in ("torch", "ember")}
    assert runs["ember"] == runs["torch"] == ["lr_group0", "lr_group1"]


def test_scalars(logs):
    _, r = logs
    for tag in ("loss", "acc"):
        ours, theirs = r["ember"].Scalars(tag), r["torch"].Scalars(tag)
        assert [(e.step, e.value) for e in ours] == [(e.step, e.value) for e in theirs]
    sub = EventAccumulator(str(logs[0] / "ember" / "lr_group1"))
    sub.Reload()
    assert [(e.step, pytest.approx(e.value)) for e in sub.Scalars("lr")] == [(0, 0.01)]


def test_histogram_protos(logs):
    _, r = logs
    for tag in ("weights", "weights_auto"):
        (ours,), (theirs,) = r["ember"].Histograms(tag), r["torch"].Histograms(tag)
        assert ours.step == theirs.step
        a, b = ours.histogram_value, theirs.histogram_value
        assert (a.min, a.max, a.num) == (b.min, b.max, b.num)
        assert a.sum == pytest.approx(b.sum, rel=1e-9) and a.sum_squares == pytest.approx(b.sum_squares, rel=1e-9)
        assert list(a.bucket_limit) == pytest.approx(list(b.bucket_limit), rel=1e-12)
        assert list(a.bucket) == list(b.bucket)
        assert sum(a.bucket) == len(VALUES)


def _pixels(event):
    return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))


def test_images(logs):
    _, r = logs
    for tag in ("image", "image_hwc", "batch", "figure"):
        (ours,), (theirs,) = r["ember"].Images(tag), r["torch"].Images(tag)
        assert (ours.width, ours.height) == (theirs.width, theirs.height)
        if tag != "figure":  # a figure's pixels depend on the font cache; its size does not
            np.testing.assert_array_equal(_pixels(ours), _pixels(theirs))
    (batch,) = r["ember"].Images("batch")
    assert (batch.height, batch.width) == (6 * 2, 5 * 8)  # 11 images, 8 to a row


def test_text(logs):
    _, r = logs
    (ours,), (theirs,) = r["ember"].Tensors("note/text_summary"), r["torch"].Tensors("note/text_summary")
    assert ours.step == theirs.step == 2
    assert ours.tensor_proto.string_val == theirs.tensor_proto.string_val == [b"**ember** wrote this"]
    assert r["ember"].SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"


def test_errors_as_torchs(tmp_path):
    for writer_cls, lib in ((torch.utils.tensorboard.SummaryWriter, torch), (SummaryWriter, ember)):
        with writer_cls(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(AssertionError, match="Tensor should contain one element"):
                w.add_scalar("bad", lib.ones(2), 0)
            with pytest.raises(ValueError, match="The input has no element"):
                w.add_histogram("empty", lib.ones(0), 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _served(log_dir, path, body=None):
    """What a ``tensorboard`` server on loopback, started on ``log_dir``, answers at ``path``
    (a POST of ``body`` as JSON when given) once it answers something non-empty."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(log_dir),
                               "--host", "127.0.0.1", "--port", str(port), "--load_fast", "false"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={
                "Content-Type": "application/json"}, data=None if body is None else json.dumps(body).encode())
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    answer = json.loads(response.read())
                if answer:
                    return answer
            except OSError:
                pass
            assert time.monotonic() < deadline, f"tensorboard did not serve {path} in 90 s"
            assert server.poll() is None, "tensorboard exited"
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_tensorboard_server_serves_the_scalars(logs):
    root, _ = logs
    points = _served(root / "ember", "/data/plugin/scalars/scalars?run=.&tag=loss")
    assert [(step, pytest.approx(value)) for _, step, value in points] == [(s, 1.0 / (s + 1)) for s in range(4)]


# ---- the other plugins: hparams, projector, pr_curves, mesh, custom_scalars ---------------

MAT = RNG.standard_normal((10, 4)).astype(np.float32)
LABEL_IMG = RNG.random((10, 3, 4, 5)).astype(np.float32)
PR_LABELS = RNG.integers(0, 2, 200)
PR_PREDICTIONS = RNG.random(200).astype(np.float32)
PR_WEIGHTS = RNG.random(200)
VERTICES = RNG.standard_normal((1, 4, 3)).astype(np.float32)
COLORS = RNG.integers(0, 255, (1, 4, 3)).astype(np.uint8)
FACES = np.array([[[0, 1, 2], [1, 2, 3]]], np.int32)
HPARAMS = {"lr": 0.1, "bsize": 4, "opt": "adam", "skipped": None}
METRICS = {"hparam/acc": 0.9, "hparam/loss": 0.2}
LAYOUT = {"Losses": {"both": ["Multiline", ["loss/train", "loss/val"]], "band": ["Margin", ["v", "lo", "hi"]]},
          "Other": {"one": ["Multiline", ["acc"]]}}


def _log_plugins(lib, writer_cls, log_dir):
    as_tensor = (lambda a: torch.from_numpy(a.copy())) if lib is torch else (lambda a: ember.tensor(a))
    with writer_cls(log_dir) as w:
        w.add_hparams({**HPARAMS, "t": as_tensor(np.array([0.5], np.float32))}, METRICS,
                      hparam_domain_discrete={"opt": ["adam", "sgd"], "bsize": [4, 8]}, run_name="run1", global_step=3)
        w.add_hparams({"lr": 0.01}, {"hparam/acc": 0.5}, run_name="run2")
        w.add_embedding(as_tensor(MAT), metadata=list(range(10)), label_img=as_tensor(LABEL_IMG), global_step=1,
                        tag="emb/a")
        w.add_embedding(as_tensor(MAT), metadata=[[i, f"x{i}"] for i in range(10)], metadata_header=["n", "name"],
                        tag="two")
        w.add_embedding(as_tensor(MAT[:3]), global_step=2)
        w.add_pr_curve("pr", as_tensor(PR_LABELS), as_tensor(PR_PREDICTIONS), 2, num_thresholds=50, weights=PR_WEIGHTS)
        w.add_pr_curve("pr_default", PR_LABELS, PR_PREDICTIONS, 0)
        w.add_pr_curve("pr_capped", PR_LABELS, PR_PREDICTIONS, 0, num_thresholds=300)
        w.add_pr_curve_raw("pr_raw", np.arange(5), np.arange(5), np.arange(5), np.arange(5), np.linspace(0, 1, 5),
                           np.linspace(1, 0, 5), 1, num_thresholds=5)
        w.add_mesh("mesh", as_tensor(VERTICES), colors=as_tensor(COLORS), faces=as_tensor(FACES),
                   config_dict={"camera": {"cls": "PerspectiveCamera", "config": {"fov": 75}}}, global_step=0)
        w.add_mesh("cloud", as_tensor(VERTICES), global_step=1)
        w.add_custom_scalars(LAYOUT)
        w.add_custom_scalars_multilinechart(["a", "b"], category="C", title="t")
        w.add_custom_scalars_marginchart(["v", "lo", "hi"])


@pytest.fixture(scope="module")
def plugin_logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb_plugins")
    _log_plugins(torch, torch.utils.tensorboard.SummaryWriter, str(root / "torch"))
    _log_plugins(ember, SummaryWriter, str(root / "ember"))
    return root


def _summary_values(log_dir):
    """(step, Summary.Value) of every event in ``log_dir``'s event files, read with
    TensorBoard's own loader; wall times aside."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    return [(event.step, value) for path in sorted(log_dir.glob("events.out.tfevents.*"))
            for event in EventFileLoader(str(path)).Load() for value in event.summary.value]


def _canonical(value):
    """``value`` with hparams plugin content serialized deterministically (map entries sorted):
    protobuf writes a map in an order that may differ between its versions."""
    if value.metadata.plugin_data.plugin_name == "hparams":
        from tensorboard.plugins.hparams import plugin_data_pb2
        value = type(value).FromString(value.SerializeToString())
        content = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
        value.metadata.plugin_data.content = content.SerializeToString(deterministic=True)
    return value


def _canonical_contents(contents, plugin):
    if contents is None or plugin != "hparams":
        return contents
    from tensorboard.plugins.hparams import plugin_data_pb2
    return {tag: plugin_data_pb2.HParamsPluginData.FromString(c).SerializeToString(deterministic=True)
            for tag, c in contents.items()}


@pytest.mark.parametrize("run", [".", "run1", "run2"])
def test_plugin_summaries_equal_torchs(plugin_logs, run):
    ours, theirs = _summary_values(plugin_logs / "ember" / run), _summary_values(plugin_logs / "torch" / run)
    assert [(s, v.tag, v.metadata.plugin_data.plugin_name) for s, v in ours] == \
        [(s, v.tag, v.metadata.plugin_data.plugin_name) for s, v in theirs]
    assert len(ours) == {".": 11, "run1": 5, "run2": 4}[run]
    for (_, a), (_, b) in zip(ours, theirs):
        assert _canonical(a) == _canonical(b), a.tag  # metadata (the plugins' content), tensor, values


def _plugin_content(reader, plugin):
    try:
        return reader.PluginTagToContent(plugin)
    except KeyError:  # no summary of that plugin in this run
        return None


def test_plugin_data_read_back(plugin_logs):
    """The plugins' view of the same events: hparams sessions, pr_curve tables, mesh parts."""
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    from tensorboard.util import tensor_util
    readers = {}
    for name in ("torch", "ember"):
        readers[name] = {}
        for run in (".", "run1"):
            reader = EventAccumulator(str(plugin_logs / name / run), size_guidance={"tensors": 0})
            reader.Reload()
            readers[name][run] = reader
    for run in (".", "run1"):
        ours, theirs = readers["ember"][run], readers["torch"][run]
        assert ours.Tags()["tensors"] == theirs.Tags()["tensors"]
        contents = [tuple(_canonical_contents(_plugin_content(reader, p), p) for reader in (ours, theirs))
                    for p in ("hparams", "pr_curves", "mesh", "custom_scalars")]
        assert all(a == b for a, b in contents) and any(a for a, _ in contents)
        for tag in ours.Tags()["tensors"]:
            for a, b in zip(ours.Tensors(tag), theirs.Tensors(tag)):
                assert a.step == b.step
                np.testing.assert_array_equal(tensor_util.make_ndarray(a.tensor_proto),
                                              tensor_util.make_ndarray(b.tensor_proto))
    start = hparams_metadata.parse_session_start_info_plugin_data(
        readers["ember"]["run1"].PluginTagToContent("hparams")[hparams_metadata.SESSION_START_INFO_TAG])
    assert {k: v.WhichOneof("kind") for k, v in start.hparams.items()} == {
        "lr": "number_value", "bsize": "number_value", "opt": "string_value", "t": "number_value"}
    (table,) = readers["ember"]["."].Tensors("pr")
    curve = tensor_util.make_ndarray(table.tensor_proto)
    assert curve.shape == (6, 50)
    assert curve[0, 0] == pytest.approx(float((PR_LABELS * PR_WEIGHTS).sum()), rel=1e-6)  # every positive


def test_projector_files_equal_torchs(plugin_logs):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    files = sorted(str(p.relative_to(plugin_logs / "torch")) for p in (plugin_logs / "torch").rglob("*")
                   if p.is_file() and not p.name.startswith("events"))
    assert files == sorted(str(p.relative_to(plugin_logs / "ember")) for p in (plugin_logs / "ember").rglob("*")
                           if p.is_file() and not p.name.startswith("events"))
    assert "00001/emb%2fa/sprite.png" in files and "projector_config.pbtxt" in files
    for name in files:
        assert (plugin_logs / "ember" / name).read_bytes() == (plugin_logs / "torch" / name).read_bytes(), name
    config = text_format.Parse((plugin_logs / "ember" / "projector_config.pbtxt").read_text(), ProjectorConfig())
    assert [e.tensor_name for e in config.embeddings] == ["emb/a:00001", "two:00000", "default:00002"]
    assert list(config.embeddings[0].sprite.single_image_dim) == [5, 4]
    rows = (plugin_logs / "ember" / "00001" / "emb%2fa" / "tensors.tsv").read_text().splitlines()
    np.testing.assert_array_equal(np.array([[float(x) for x in r.split("\t")] for r in rows], np.float32), MAT)


def test_a_bool_hparam_is_tensorboards_bool(tmp_path):
    """torch writes a bool hyperparameter as the number 1 (its bool branch is unreachable);
    ember keeps it a bool, as torch's docstring lists the type."""
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    kinds = {}
    for writer_cls, name in ((torch.utils.tensorboard.SummaryWriter, "torch"), (SummaryWriter, "ember")):
        with writer_cls(str(tmp_path / name)) as w:
            w.add_hparams({"flag": True}, {"m": 1.0}, run_name="r")
        (start,) = [v.metadata.plugin_data.content for _, v in _summary_values(tmp_path / name / "r")
                    if v.tag == hparams_metadata.SESSION_START_INFO_TAG]
        value = hparams_metadata.parse_session_start_info_plugin_data(start).hparams["flag"]
        kinds[name] = (value.WhichOneof("kind"), getattr(value, value.WhichOneof("kind")))
    assert kinds == {"torch": ("number_value", 1.0), "ember": ("bool_value", True)}


def test_plugin_errors_as_torchs(tmp_path):
    for writer_cls, lib in ((torch.utils.tensorboard.SummaryWriter, torch), (SummaryWriter, ember)):
        log_dir = tmp_path / lib.__name__
        with writer_cls(str(log_dir)) as w:
            with pytest.raises(TypeError):
                w.add_hparams([("lr", 0.1)], {})
            with pytest.raises(TypeError):
                w.add_hparams({"opt": "adam"}, {}, hparam_domain_discrete={"opt": [1, 2]})
            with pytest.raises(ValueError):
                w.add_hparams({"layers": [1, 2]}, {})
            with pytest.raises(AssertionError):
                w.add_embedding(lib.ones(3, 2), metadata=[1, 2])
            with pytest.raises(AssertionError):
                w.add_embedding(lib.ones(3, 2), label_img=lib.ones(2, 3, 4, 4), global_step=1)
            with pytest.raises(AssertionError):
                w.add_embedding(lib.ones(3, 2, 1), global_step=2)
            with pytest.raises(AssertionError):
                w.add_embedding(lib.ones(2, 2), metadata=[[1, 2], [3, 4]], metadata_header=["a"], global_step=3)
            (log_dir / "00004").mkdir()
            (log_dir / "00004" / "file").write_text("")
            with pytest.raises(NotADirectoryError):
                w.add_embedding(lib.ones(2, 2), global_step=4, tag="file")
            with pytest.raises(AssertionError):
                w.add_custom_scalars({"c": {"t": ["Margin", ["a", "b"]]}})
            with pytest.raises(AssertionError):
                w.add_custom_scalars_marginchart(["a", "b"])


def test_a_tensorboard_server_serves_the_hparams(plugin_logs):
    groups = _served(plugin_logs / "ember", "/data/plugin/hparams/session_groups", {
        "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [], "startIndex": 0,
        "sliceSize": 10})
    by_name = {g["name"]: g for g in groups["sessionGroups"]}
    assert sorted(by_name) == ["run1", "run2"]
    assert by_name["run1"]["hparams"] == {"lr": pytest.approx(0.1), "bsize": 4.0, "opt": "adam", "t": 0.5}
    assert {m["name"]["tag"]: (m["trainingStep"], pytest.approx(m["value"])) for m in
            by_name["run1"]["metricValues"]} == {"hparam/acc": (3, 0.9), "hparam/loss": (3, 0.2)}
    assert by_name["run1"]["sessions"][0]["status"] == "STATUS_SUCCESS"


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 4)
            self.out = lib.nn.Linear(4, 2)

        def forward(self, x):
            return self.out(lib.relu(self.fc(x))) * 2

    return Net()


def test_add_graph_as_torchs(tmp_path):
    graphs = {}
    for lib, writer_cls in ((torch, torch.utils.tensorboard.SummaryWriter), (ember, SummaryWriter)):
        log_dir = tmp_path / lib.__name__
        with writer_cls(str(log_dir)) as w:
            w.add_graph(_net(lib), lib.ones(5, 3))
        reader = EventAccumulator(str(log_dir))
        reader.Reload()
        assert reader.Tags()["graph"] and reader.Tags()["run_metadata"] == ["step1"]
        assert reader.RunMetadata("step1").step_stats.dev_stats[0].device == "/device:CPU:0"
        graphs[lib.__name__] = reader.Graph()
    ours, theirs = graphs["ember"], graphs["torch"]
    assert ours.versions.producer == theirs.versions.producer

    def io(g):
        return sorted((n.name.split("/")[0], n.op, [d.size for d in n.attr["_output_shapes"].list.shape[0].dim])
                      for n in g.node if n.op == "IO Node")

    assert io(ours) == io(theirs) == [("input", "IO Node", [5, 3]), ("output", "IO Node", [5, 2])]
    getattrs = lambda g: sorted(n.attr["attr"].s.decode() for n in g.node if n.op == "prim::GetAttr")  # noqa: E731
    assert getattrs(ours) == getattrs(theirs)  # the four parameters, named as torch names them
    by_name = {n.name: n for n in ours.node}
    ops = [n.op for n in ours.node if n.op.startswith("ember::")]
    assert ops == ["ember::linear", "ember::relu", "ember::linear", "ember::mul"]
    theirs_ops = [n.op.split("::")[1] for n in theirs.node if n.op.startswith("aten::")]
    assert [o.split("::")[1] for o in ops] == theirs_ops
    relu = next(n for n in ours.node if n.op == "ember::relu")
    (src,) = relu.input
    assert by_name[src].op == "ember::linear"  # edges follow the data
    assert [d.size for d in relu.attr["_output_shapes"].list.shape[0].dim] == [5, 4]
