"""A real Hub server on loopback for tests: olah serving git repositories the tests build.

:class:`HubServer` runs olah (a self-hosted Hugging Face Hub mirror, installed in its own
virtual environment by ``scripts/install-olah.sh``) on a free 127.0.0.1 port in offline
mode, serving git repositories under ``<root>/mirrors/<kernels|models>/<org>/<name>``. In
front of olah runs a small reverse proxy that records every request, so tests can count
requests, that can cut a response mid-transfer to simulate a server dying during a
download, and that answers the organisation API itself (:mod:`tests.support.orgs`). :attr:`HubServer.endpoint` is the proxy's URL; point ``HF_ENDPOINT`` at it.

:class:`GitRepo` builds those repositories: write files, commit, create or move branches
and tags. :func:`make_kernel_repo` builds a kernel repository in one call.
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.orgs import Answer, Organisations

__all__ = [
    "OLAH_VENV_ENV",
    "GitRepo",
    "HubServer",
    "RecordedRequest",
    "make_kernel_repo",
    "olah_cli",
    "olah_venv",
]

#: Environment variable naming olah's virtual environment.
OLAH_VENV_ENV = "KERNEL_PLUGINS_OLAH_VENV"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_READY_REPO = "kernel-plugins-tests/ready"
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
}


def olah_venv() -> Path:
    """olah's virtual environment: ``$KERNEL_PLUGINS_OLAH_VENV``, else ``<repo>/.olah-venv``."""
    env = os.environ.get(OLAH_VENV_ENV)
    return Path(env) if env else _REPO_ROOT / ".olah-venv"


def olah_cli() -> Path | None:
    """The ``olah-cli`` executable in :func:`olah_venv`, or ``None`` when olah is not installed."""
    for name in ("olah-cli", "olah-cli.exe"):
        for sub in ("bin", "Scripts"):
            path = olah_venv() / sub / name
            if path.is_file() and os.access(path, os.X_OK):
                return path
    return None


def _die_with_parent() -> None:
    """In the child (Linux): get SIGTERM when the test process dies, so olah never lingers."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- git repositories -------------------------------------------------------------------


class GitRepo:
    """A git working tree that olah serves as one Hub repository.

    Commits always go to the checked-out branch ``main``; branches (e.g. ``v1``) and tags
    are then pointed at commits with :meth:`branch` and :meth:`tag`. Olah serves new
    commits, branches and tags at once.
    """

    def __init__(self, path: Path, repo_id: str, repo_type: str) -> None:
        self.path = path
        self.repo_id = repo_id
        self.repo_type = repo_type
        self._clock = 1_700_000_000
        if not (path / ".git").exists():
            path.mkdir(parents=True, exist_ok=True)
            self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        """Run ``git`` in the repository without user or system config; return stdout."""
        self._clock += 60
        stamp = f"{self._clock} +0000"
        env = {
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "kernel-plugins tests",
            "GIT_AUTHOR_EMAIL": "tests@example.invalid",
            "GIT_COMMITTER_NAME": "kernel-plugins tests",
            "GIT_COMMITTER_EMAIL": "tests@example.invalid",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed in {self.path}: {done.stderr}")
        return done.stdout.strip()

    def write(self, relpath: str, content: str | bytes) -> GitRepo:
        """Write one file (parents created); ``str`` is written as UTF-8."""
        target = self.path / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        return self

    def write_files(self, files: Mapping[str, str | bytes], prefix: str = "") -> GitRepo:
        """Write several files, each path relative to ``prefix``."""
        for rel, content in files.items():
            self.write(f"{prefix}{rel}", content)
        return self

    def remove(self, relpath: str) -> GitRepo:
        """Delete a file or folder from the working tree (commit to record it)."""
        target = self.path / relpath
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        return self

    def commit(self, message: str = "update") -> str:
        """Commit everything in the working tree to ``main``; return the new sha."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        """The sha ``main`` points at."""
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str, sha: str | None = None) -> GitRepo:
        """Create branch ``name`` at ``sha`` (default: HEAD), or move it there."""
        self.git("branch", "-f", name, sha or self.head())
        return self

    def tag(self, name: str, sha: str | None = None) -> GitRepo:
        """Create tag ``name`` at ``sha`` (default: HEAD), or move it there."""
        self.git("tag", "-f", name, sha or self.head())
        return self

    def delete_branch(self, name: str) -> GitRepo:
        """Delete branch ``name``."""
        self.git("branch", "-D", name)
        return self


def make_kernel_repo(
    server: HubServer,
    repo_id: str,
    repo_type: str = "kernel",
    variants: Mapping[str, Mapping[str, str | bytes]] | None = None,
    branches: Sequence[str] = ("v1",),
    tags: Sequence[str] = (),
    extra_files: Mapping[str, str | bytes] | None = None,
) -> GitRepo:
    """Create (or extend) a kernel repository and commit it.

    :param variants: variant name -> {path inside ``build/<variant>/``: content}; default
        one ``torch-cpu`` variant with an ``__init__.py``.
    :param branches: branches to point at the new commit (e.g. ``("v1",)``).
    :param tags: tags to point at the new commit.
    :param extra_files: more files, paths relative to the repository root.
    """
    repo = server.repo(repo_id, repo_type)
    if variants is None:
        variants = {"torch-cpu": {"__init__.py": "VALUE = 1\n"}}
    repo.write("README.md", f"# {repo_id}\n")
    for variant, files in variants.items():
        repo.write_files(files, prefix=f"build/{variant}/")
    repo.write_files(extra_files or {})
    repo.commit(f"build {', '.join(variants)}")
    for b in branches:
        repo.branch(b)
    for t in tags:
        repo.tag(t)
    return repo


# --- the counting proxy -----------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request that reached the proxy."""

    method: str
    path: str
    status: int | None = None
    #: the request's headers, names in lower case (not compared)
    headers: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass
class _Cut:
    """Cut the bodies of GET responses whose path contains ``needle`` after ``after`` bytes."""

    needle: str
    after: int
    remaining: int


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: _CountingProxy


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Stay quiet."""

    def do_GET(self) -> None:  # noqa: N802
        """Forward a GET."""
        self._forward()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET  # noqa: N815

    def _forward(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        local = owner.organisations.answer(self.path)
        if local is not None:  # olah does not serve the organisation API: answer it here
            owner._record(self.command, self.path, local.status, self.headers)
            self._answer(local)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = owner.upstream_netloc
        host, port = owner.upstream_netloc.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
            except OSError as exc:
                owner._record(self.command, self.path, 502, self.headers)
                self.send_error(502, f"upstream olah unreachable: {exc}")
                return
            owner._record(self.command, self.path, resp.status, self.headers)
            self._relay(resp, owner._take_cut(self.command, self.path))
        finally:
            conn.close()

    def _answer(self, answer: Answer) -> None:
        time.sleep(answer.delay)
        try:
            self.send_response_only(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
        except OSError:  # the client gave up waiting
            self.close_connection = True

    def _relay(self, resp: http.client.HTTPResponse, cut_after: int | None) -> None:
        owner = self.server.owner
        self.send_response_only(resp.status, resp.reason)
        has_length = False
        for key, value in resp.getheaders():
            low = key.lower()
            if low in _HOP_BY_HOP:
                continue
            if low == "content-length":
                has_length = True
            if low == "location":
                value = value.replace(owner.upstream_netloc, owner.netloc)
            self.send_header(key, value)
        no_body = self.command == "HEAD" or resp.status in (204, 304) or resp.status < 200
        chunked = not has_length and not no_body
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if no_body:
            return
        sent = 0
        while True:
            block = resp.read(64 * 1024)
            if not block:
                break
            if cut_after is not None and sent + len(block) > cut_after:
                self._write(block[: cut_after - sent], chunked)
                self.wfile.flush()
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self._write(block, chunked)
            sent += len(block)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write(self, data: bytes, chunked: bool) -> None:
        if not data:
            return
        if chunked:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        else:
            self.wfile.write(data)


class _CountingProxy:
    """A streaming reverse proxy on 127.0.0.1 that records each request."""

    def __init__(self) -> None:
        self._server = _ProxyServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.owner = self
        self.netloc = f"127.0.0.1:{self._server.server_address[1]}"
        self.upstream_netloc = ""
        self._lock = threading.Lock()
        self._log: list[RecordedRequest] = []
        self._cuts: list[_Cut] = []
        self.organisations = Organisations()
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="hub-proxy", daemon=True
        )
        self._thread.start()

    def _record(self, method: str, path: str, status: int | None, headers: Any = ()) -> None:
        with self._lock:
            self._log.append(RecordedRequest(method, path, status, {k.lower(): v for k, v in dict(headers).items()}))

    def _take_cut(self, method: str, path: str) -> int | None:
        if method != "GET":
            return None
        with self._lock:
            for cut in self._cuts:
                if cut.needle in path and cut.remaining > 0:
                    cut.remaining -= 1
                    return cut.after
        return None

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def clear(self) -> None:
        with self._lock:
            self._log.clear()
            self._cuts.clear()

    def add_cut(self, cut: _Cut) -> None:
        with self._lock:
            self._cuts.append(cut)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


# --- the server -------------------------------------------------------------------------


class HubServer:
    """olah on a free loopback port, behind a counting proxy, serving repos built in ``root``.

    Use as a context manager or call :meth:`start` / :meth:`close`. ``endpoint`` is the
    proxy URL to give huggingface_hub (``HF_ENDPOINT``).
    """

    def __init__(self, root: Path, *, olah_cli_path: Path | None = None) -> None:
        cli = olah_cli_path or olah_cli()
        if cli is None:
            raise RuntimeError(
                f"olah is not installed in {olah_venv()}; run scripts/install-olah.sh "
                f"(or set {OLAH_VENV_ENV} to its virtual environment)."
            )
        self.root = Path(root)
        self.mirrors = self.root / "mirrors"
        self.olah_cli = cli
        self._proxy = _CountingProxy()
        self._port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._repos: dict[tuple[str, str], GitRepo] = {}
        make_kernel_repo(self, _READY_REPO, "model", branches=())

    # endpoints
    @property
    def endpoint(self) -> str:
        """URL of the counting proxy in front of olah; use it as ``HF_ENDPOINT``."""
        return f"http://{self._proxy.netloc}"

    @property
    def olah_endpoint(self) -> str:
        """URL of olah itself (requests made there are not recorded)."""
        return f"http://127.0.0.1:{self._port}"

    # repositories
    def repo(self, repo_id: str, repo_type: str = "kernel") -> GitRepo:
        """The git repository served as ``repo_id`` of ``repo_type``; created when new."""
        key = (repo_type, repo_id)
        if key not in self._repos:
            org, name = repo_id.split("/")
            path = self.mirrors / f"{repo_type}s" / org / name
            self._repos[key] = GitRepo(path, repo_id, repo_type)
        return self._repos[key]

    @property
    def organisations(self) -> Organisations:
        """What the organisation API answers (every organisation is unknown until set)."""
        return self._proxy.organisations

    # request log
    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request that reached the proxy since the last :meth:`clear_requests`."""
        return self._proxy.requests()

    def clear_requests(self) -> None:
        """Forget recorded requests and pending cuts."""
        self._proxy.clear()

    def paths(self, method: str | None = None) -> list[str]:
        """Paths of the recorded requests, optionally only those with ``method``."""
        return [r.path for r in self.requests if method is None or r.method == method]

    def cut_responses(self, path_contains: str, *, after_bytes: int, times: int = 1) -> None:
        """Break off the next ``times`` GET responses whose path contains ``path_contains``.

        The headers (with the full Content-Length) and ``after_bytes`` body bytes are sent,
        then the connection is closed, as if the server died mid-transfer. huggingface_hub
        retries broken downloads a few times, so use ``times`` > 5 to make one fail.
        """
        self._proxy.add_cut(_Cut(path_contains, after_bytes, times))

    # process control
    @property
    def running(self) -> bool:
        """Whether the olah process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 60.0) -> HubServer:
        """Start olah and wait until it answers; return ``self``."""
        if self.running:
            return self
        self._proxy.upstream_netloc = f"127.0.0.1:{self._port}"
        config = self.root / "olah.toml"
        config.write_text(self._config())
        logs = self.root / "olah-logs"
        logs.mkdir(parents=True, exist_ok=True)
        out = open(self.root / "olah.out", "ab")  # noqa: SIM115 - owned by the process
        try:
            self._process = subprocess.Popen(
                [str(self.olah_cli), "-c", str(config), "--log-path", str(logs)],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        finally:
            out.close()
        self._wait_ready(timeout)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop olah with SIGTERM (SIGKILL after ``timeout`` seconds)."""
        proc, self._process = self._process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)

    def restart(self, timeout: float = 60.0) -> HubServer:
        """Stop and start olah again (same port, same repositories)."""
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        """Stop olah and the proxy."""
        self.stop()
        self._proxy.close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self) -> str:
        port = self._port
        return "\n".join(
            [
                "[basic]",
                'host = "127.0.0.1"',
                f"port = {port}",
                f'repos-path = "{(self.root / "olah-cache").as_posix()}"',
                'hf-scheme = "http"',
                'hf-netloc = "127.0.0.1:9"',
                'hf-lfs-netloc = "127.0.0.1:9"',
                'mirror-scheme = "http"',
                f'mirror-netloc = "{self._proxy.netloc}"',
                f'mirror-lfs-netloc = "{self._proxy.netloc}"',
                f'mirrors-path = ["{self.mirrors.as_posix()}"]',
                "",
                "[accessibility]",
                "offline = true",
                "",
            ]
        )

    def _wait_ready(self, timeout: float) -> None:
        path = f"/api/models/{_READY_REPO}/refs"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise RuntimeError(f"olah exited during startup; see {self.root / 'olah.out'}")
            conn = http.client.HTTPConnection("127.0.0.1", self._port, timeout=2)
            try:
                conn.request("GET", path)
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            finally:
                conn.close()
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"olah did not answer within {timeout} s; see {self.root / 'olah.out'}")
