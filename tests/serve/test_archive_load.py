"""Loading archives: hash checks, zip slip, links, size limits, unpacked folders, `check`."""

import json
import os
import stat
import zipfile

import numpy as np
import pytest
from conftest import ECHO_HANDLER, make_linear_archive, write

from ember_serve import ArchiveError, create_archive, load_archive
from ember_serve.cli import archive_main, check_archive


def rewrite(src, dst, change):
    """Copy the zip ``src`` to ``dst``, passing each (name, bytes) through ``change`` (None drops it)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            out = change(info.filename, zin.read(info))
            if out is not None:
                zout.writestr(out[0], out[1])
    return str(dst)


def test_tampered_member_is_refused(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    bad = rewrite(path, tmp_path / "bad.emar",
                  lambda n, d: (n, d.replace(b"self.fc(x)", b"self.fc(x) * 2")) if n.endswith(".py") else (n, d))
    with pytest.raises(ArchiveError, match=r"member 'model_lin_1.py' .* has sha256 .* \(corrupt or tampered\)"):
        load_archive(bad)


def test_unlisted_and_missing_members(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    extra = tmp_path / "extra.emar"
    rewrite(path, extra, lambda n, d: (n, d))
    with zipfile.ZipFile(extra, "a") as zf:
        zf.writestr("sneaky.py", "print('hi')")
    with pytest.raises(ArchiveError, match=r"\['sneaky.py'\] that MANIFEST.json does not list"):
        load_archive(extra)
    missing = rewrite(path, tmp_path / "missing.emar", lambda n, d: None if n == "config.json" else (n, d))
    with pytest.raises(ArchiveError, match=r"lacks member\(s\) \['config.json'\]"):
        load_archive(missing)
    nomanifest = rewrite(path, tmp_path / "nm.emar", lambda n, d: None if n == "MANIFEST.json" else (n, d))
    with pytest.raises(ArchiveError, match="has no MANIFEST.json"):
        load_archive(nomanifest)


@pytest.mark.parametrize("evil", ["../evil.py", "/abs/evil.py", "a/../../evil.py", "c:evil.py", "a\\..\\evil.py"])
def test_paths_escaping_the_folder_are_refused(tmp_path, evil):
    path, _ = make_linear_archive(tmp_path)
    bad = tmp_path / "slip.emar"
    rewrite(path, bad, lambda n, d: (n, d))
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr(zipfile.ZipInfo(evil), b"x")
    (tmp_path / "x").mkdir()
    with pytest.raises(ArchiveError, match="not a plain relative path"):
        load_archive(bad, extract_dir=str(tmp_path / "x"))
    assert os.listdir(tmp_path / "x") == []  # names are checked before anything is written
    assert not (tmp_path / "evil.py").exists()


def test_symlink_member_is_refused(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    bad = tmp_path / "link.emar"
    rewrite(path, bad, lambda n, d: (n, d))
    info = zipfile.ZipInfo("link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        load_archive(bad)


def test_size_limit(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    with zipfile.ZipFile(path) as zf:
        total = sum(i.file_size for i in zf.infolist())
    with pytest.raises(ArchiveError, match=f"more than the limit of {total - 1}"):
        load_archive(path, max_bytes=total - 1)
    with load_archive(path, max_bytes=total) as arch:
        assert arch.name == "lin"


def test_not_a_zip(tmp_path):
    junk = tmp_path / "junk.emar"
    junk.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(ArchiveError, match="not a readable zip"):
        load_archive(junk)
    path, _ = make_linear_archive(tmp_path)
    raw = bytearray(open(path, "rb").read())
    cut = tmp_path / "cut.emar"
    cut.write_bytes(bytes(raw[: len(raw) // 2]))
    with pytest.raises(ArchiveError):
        load_archive(cut)


def test_extraction_folder_removed_on_close(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    arch = load_archive(path)
    root = arch.root
    assert os.path.isfile(os.path.join(root, "weights.safetensors"))
    arch.close()
    assert not os.path.exists(root)


def test_unpacked_folder_serves_and_is_checked(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(folder)
    with load_archive(folder) as arch:
        assert arch.root == str(folder) and arch.config.inputs[0].shape == [-1, 4]
    assert folder.is_dir()  # an unpacked folder is the user's: never removed
    with open(folder / "config.json", "a") as f:
        f.write(" ")
    with pytest.raises(ArchiveError, match="member 'config.json'"):
        load_archive(folder)


def test_two_archives_with_the_same_module_name_do_not_collide(tmp_path):
    a, _ = make_linear_archive(tmp_path / "a", name="a")
    write(tmp_path / "model.py", "from ember import nn\n\n\nclass Net(nn.Module):\n    marker = 'second'\n")
    b = create_archive(tmp_path / "b.emar", name="b", handler="tensor", model_file=str(tmp_path / "model.py"),
                       model_class="Net")
    with load_archive(a) as x, load_archive(b) as y:
        ma = x.import_module("model_a_1")
        mb = y.import_module("model")
        assert ma.Net is not mb.Net and mb.Net.marker == "second" and not hasattr(ma.Net, "marker")


def test_check_reports_one_answer_per_request(tmp_path, capsys):
    path, _ = make_linear_archive(tmp_path)
    ok, report = check_archive(path)
    assert ok and report == "lin 1: ok: handler 'tensor' answered 2 request(s), one each"
    # a handler that answers once for a whole batch fails the check
    write(tmp_path / "lazy.py", ECHO_HANDLER.replace("return out\n", "return out[:1]\n"))
    np.savez(tmp_path / "ex.npz", x=np.arange(6, dtype=np.float32).reshape(3, 2))
    bad = create_archive(tmp_path / "lazy.emar", name="lazy", handler="lazy:Echo",
                         extra_files=[str(tmp_path / "lazy.py")],
                         example_input=str(tmp_path / "ex.npz"), config={"max_batch_size": 4})
    assert archive_main(["check", bad]) == 1
    assert "FAILED: 1 answers for 3 requests" in capsys.readouterr().out


def test_check_without_example(tmp_path, capsys):
    path, _ = make_linear_archive(tmp_path, example=False)
    assert archive_main(["check", path]) == 1
    assert "has no example input" in capsys.readouterr().err


def test_manifest_is_json_with_the_format(tmp_path):
    path, _ = make_linear_archive(tmp_path)
    bad = rewrite(path, tmp_path / "fmt.emar", lambda n, d: (n, json.dumps({**json.loads(d), "format": "mar"})
                                                             .encode()) if n == "MANIFEST.json" else (n, d))
    with pytest.raises(ArchiveError, match="does not describe an ember archive"):
        load_archive(bad)
