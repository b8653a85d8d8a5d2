"""Servers for the remote-storage tests, all on 127.0.0.1: an S3-compatible one (moto) and plain HTTP."""
from __future__ import annotations

import http.server
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from ..hostile.craft import bundle, entry


class CountingRangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder with HEAD, GET and single ``Range: bytes=a-b`` requests; counts body bytes sent."""

    sent = 0
    lock = threading.Lock()

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _count(self, n: int) -> None:
        with CountingRangeHandler.lock:
            CountingRangeHandler.sent += n

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        path = self.translate_path(self.path)
        if os.path.isdir(path) or not os.path.isfile(path):
            return super().do_GET()
        data = Path(path).read_bytes()
        ranged = self.headers.get("Range", "")
        if ranged.startswith("bytes="):
            first, _, last = ranged[6:].partition("-")
            start = int(first)
            stop = min(int(last) + 1 if last else len(data), len(data))
            body = data[start:stop]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{stop - 1}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(body)
        self._count(len(body))


@pytest.fixture
def http_root(tmp_path):
    """(base URL, served folder): a threaded HTTP server on 127.0.0.1 serving ``tmp_path/www``."""
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a, **k: CountingRangeHandler(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    CountingRangeHandler.sent = 0
    try:
        yield f"http://127.0.0.1:{server.server_port}", root
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def s3_bucket(monkeypatch):
    """An S3-compatible server (moto) on 127.0.0.1 and an s3fs filesystem pointed at it: (fs, "bucket")."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
                       "AWS_ENDPOINT_URL_S3": endpoint}.items():
        monkeypatch.setenv(key, value)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(anon=False, client_kwargs={"endpoint_url": endpoint})
    import uuid

    bucket = f"ckpt-test-{uuid.uuid4().hex[:12]}"  # moto keeps state per process: a fresh bucket each test
    fs.mkdir(bucket)
    try:
        yield fs, bucket
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()


def big_bundle(directory: Path, name: str = "ckpt-100", mib: int = 16) -> tuple[Path, np.ndarray]:
    """A bundle with one ``mib`` MiB float32 tensor ``big`` and a small one ``small``."""
    big = np.arange(mib * (1 << 18), dtype="<f4")
    small = np.array([1.0, 2.0, 3.0], dtype="<f4")
    data = big.tobytes() + small.tobytes()
    prefix = bundle(directory, name, [(b"big", entry(1, [big.size], 0, big.nbytes, data[:big.nbytes])),
                                      (b"small", entry(1, [3], big.nbytes, 12, data[big.nbytes:]))], data)
    return prefix, big
