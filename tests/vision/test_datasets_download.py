"""Download and archive helpers of ember_vision.datasets.utils, against a loopback HTTP
server that honours (or ignores) Range requests and can drop a transfer half-way."""

import gzip
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile

import pytest

from ember_vision.datasets import utils

PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Range")))
        data = srv.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start, rng = 0, self.headers.get("Range")
        if rng and srv.honour_range:
            start = int(rng[len("bytes="):].split("-")[0])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # a dropped connection: announce the whole body, send part of it, hang up
        self.wfile.write(body if srv.cut is None else body[: srv.cut])


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.requests, srv.honour_range, srv.cut = {}, [], True, None
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    yield srv
    srv.shutdown()
    srv.server_close()


def _md5(data):
    return hashlib.md5(data).hexdigest()


def test_download_checks_md5_and_sha256(tmp_path, server):
    server.files["/f.bin"] = PAYLOAD
    path = utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False,
                              sha256=hashlib.sha256(PAYLOAD).hexdigest())
    assert path == os.path.join(tmp_path, "f.bin")
    assert open(path, "rb").read() == PAYLOAD
    assert os.listdir(tmp_path) == ["f.bin"]
    # a good file already there is not fetched again
    utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False)
    assert len(server.requests) == 1
    assert utils.check_integrity(path, _md5(PAYLOAD)) and not utils.check_integrity(path, "0" * 32)
    assert utils.calculate_sha256(path) == hashlib.sha256(PAYLOAD).hexdigest()


@pytest.mark.parametrize("which", ["md5", "sha256"])
def test_bad_checksum_keeps_no_file(tmp_path, server, which):
    server.files["/f.bin"] = PAYLOAD
    kwargs = {which: "0" * (32 if which == "md5" else 64)}
    with pytest.raises(RuntimeError, match=f"expected {which}"):
        utils.download_url(server.url + "/f.bin", tmp_path, progress=False, **kwargs)
    assert os.listdir(tmp_path) == []


def test_interrupted_download_resumes_with_range(tmp_path, server):
    server.files["/f.bin"] = PAYLOAD
    server.cut = 3000
    with pytest.raises(RuntimeError, match="interrupted"):
        utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False)
    # nothing under the final name; the partial bytes are kept for the next try
    assert os.listdir(tmp_path) == ["f.bin.part"]
    assert (tmp_path / "f.bin.part").read_bytes() == PAYLOAD[:3000]
    server.cut = None
    path = utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False)
    assert server.requests[-1] == ("/f.bin", "bytes=3000-")
    assert open(path, "rb").read() == PAYLOAD and os.listdir(tmp_path) == ["f.bin"]


def test_resume_when_server_ignores_range(tmp_path, server):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin.part").write_bytes(b"stale bytes that are not the file")
    server.honour_range = False
    path = utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False)
    assert server.requests[-1][1] is not None  # it asked to resume, got the whole file, started over
    assert open(path, "rb").read() == PAYLOAD


def test_complete_part_file_is_verified(tmp_path, server):
    server.files["/f.bin"] = PAYLOAD
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)  # all there: the server answers 416
    path = utils.download_url(server.url + "/f.bin", tmp_path, md5=_md5(PAYLOAD), progress=False)
    assert open(path, "rb").read() == PAYLOAD and os.listdir(tmp_path) == ["f.bin"]


def test_missing_url_raises_http_error(tmp_path, server):
    import urllib.error
    with pytest.raises(urllib.error.HTTPError):
        utils.download_url(server.url + "/nope.bin", tmp_path, progress=False)
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- archives

FILES = {"a.txt": b"alpha", "sub/b.bin": bytes(range(50))}


def _tar_bytes(compression, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:" + compression) as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _file_member(name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link_member(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


@pytest.mark.parametrize("suffix,compression", [(".tar", ""), (".tar.gz", "gz"), (".tgz", "gz"),
                                                (".tar.bz2", "bz2"), (".tar.xz", "xz")])
def test_extract_tar(tmp_path, suffix, compression):
    archive = tmp_path / ("data" + suffix)
    archive.write_bytes(_tar_bytes(compression, [_file_member(n, d) for n, d in FILES.items()]))
    out = utils.extract_archive(archive, tmp_path / "out")
    assert out == str(tmp_path / "out")
    for name, data in FILES.items():
        assert (tmp_path / "out" / name).read_bytes() == data


def test_extract_zip_and_remove_finished(tmp_path):
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name, data in FILES.items():
            zf.writestr(name, data)
    assert utils.extract_archive(archive, remove_finished=True) == str(tmp_path)
    assert not archive.exists()
    for name, data in FILES.items():
        assert (tmp_path / name).read_bytes() == data


@pytest.mark.parametrize("suffix,compress", [(".gz", gzip.compress), (".xz", __import__("lzma").compress),
                                             (".bz2", __import__("bz2").compress)])
def test_decompress_single_file(tmp_path, suffix, compress):
    src = tmp_path / ("x-idx1-ubyte" + suffix)
    src.write_bytes(compress(PAYLOAD))
    out = utils.extract_archive(src)
    assert out == str(tmp_path / "x-idx1-ubyte")
    assert (tmp_path / "x-idx1-ubyte").read_bytes() == PAYLOAD


def test_unknown_suffix(tmp_path):
    (tmp_path / "a.rar").write_bytes(b"x")
    with pytest.raises(RuntimeError, match="Unknown compression or archive type"):
        utils.extract_archive(tmp_path / "a.rar")


MALICIOUS_TAR = {
    "absolute": [_file_member("/evil.txt", b"x")],
    "dotdot": [_file_member("ok.txt", b"x"), _file_member("../evil.txt", b"x")],
    "nested dotdot": [_file_member("sub/../../evil.txt", b"x")],
    "symlink outside": [_link_member("link", "../../etc")],
    "absolute symlink": [_link_member("link", "/etc/passwd")],
    "hardlink outside": [_link_member("link", "../evil.txt", tarfile.LNKTYPE)],
    "device": [(tarfile.TarInfo("dev"), None)],
}
MALICIOUS_TAR["device"][0][0].type = tarfile.CHRTYPE


@pytest.mark.parametrize("case", sorted(MALICIOUS_TAR))
def test_malicious_tar_is_refused_whole(tmp_path, case):
    archive = tmp_path / "bad.tar.gz"
    archive.write_bytes(_tar_bytes("gz", MALICIOUS_TAR[case]))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="refusing to extract"):
        utils.extract_archive(archive, out)
    assert os.listdir(out) == []  # nothing written, not even the harmless members
    assert not (tmp_path / "evil.txt").exists()


def test_symlink_inside_root_is_accepted(tmp_path):
    archive = tmp_path / "ok.tar"
    archive.write_bytes(_tar_bytes("", [_file_member("sub/a.txt", b"a"), _link_member("sub/l", "a.txt")]))
    utils.extract_archive(archive, tmp_path / "out")
    assert os.path.islink(tmp_path / "out" / "sub" / "l")
    assert (tmp_path / "out" / "sub" / "l").read_bytes() == b"a"


@pytest.mark.parametrize("name", ["../evil.txt", "/abs/evil.txt", "a/../../evil.txt"])
def test_malicious_zip_is_refused(tmp_path, name):
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("fine.txt", b"x")
        zf.writestr(zipfile.ZipInfo(name), b"x")
    with pytest.raises(RuntimeError, match="refusing to extract"):
        utils.extract_archive(archive, tmp_path / "out")
    assert os.listdir(tmp_path / "out") == [] and not (tmp_path / "evil.txt").exists()


def test_zip_symlink_outside_is_refused(tmp_path):
    archive = tmp_path / "bad.zip"
    info = zipfile.ZipInfo("link")
    info.external_attr = (0o120777 << 16)
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(info, "../../outside")
    with pytest.raises(RuntimeError, match="points outside"):
        utils.extract_archive(archive, tmp_path / "out")


def test_download_and_extract_archive(tmp_path, server):
    data = _tar_bytes("gz", [_file_member(n, d) for n, d in FILES.items()])
    server.files["/pack.tar.gz"] = data
    utils.download_and_extract_archive(server.url + "/pack.tar.gz", tmp_path / "dl", tmp_path / "ex",
                                       md5=_md5(data))
    assert (tmp_path / "dl" / "pack.tar.gz").read_bytes() == data
    for name, content in FILES.items():
        assert (tmp_path / "ex" / name).read_bytes() == content


def test_verify_str_arg_messages():
    assert utils.verify_str_arg("a", "split", ("a", "b")) == "a"
    with pytest.raises(ValueError, match=r"Unknown value 'c' for argument split. Valid values are \{'a', 'b'\}."):
        utils.verify_str_arg("c", "split", ("a", "b"))
    with pytest.raises(ValueError, match="Expected type str for argument split, but got type <class 'int'>."):
        utils.verify_str_arg(3, "split", ("a", "b"))
