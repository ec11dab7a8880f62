"""Named hosts for sandboxed commands: a small HTTP proxy that lets through only the allowed hosts.

A sandboxed command has no network of its own (``--unshare-net``). When the settings name hosts
(``"network": ["pypi.org", "*.pythonhosted.org"]``), this proxy listens on a Unix socket in a private
folder that is bound into the sandbox, and :mod:`netbridge` (run inside, in front of the command)
turns it back into ``127.0.0.1:PORT`` there, with ``HTTP_PROXY``/``HTTPS_PROXY`` pointing at it.
The proxy reads the request line (``CONNECT host:443`` for HTTPS, an absolute ``http://host/…`` URL
for plain HTTP), refuses any other host with ``403`` and a sentence naming the host and the
setting, and otherwise connects and relays bytes both ways. Everything else (raw sockets, DNS,
UDP) still has no route out.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import shutil
import socket
import tempfile
import threading
from urllib.parse import urlsplit

HEADER_LIMIT = 65536
CONNECT_TIMEOUT = 15.0
RELAY_CHUNK = 65536


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """``pypi.org`` matches itself only; ``*.pythonhosted.org`` any of its sub-domains."""
    host = host.lower().rstrip(".")
    return any(fnmatch.fnmatchcase(host, pattern.lower()) for pattern in allowed)


def _target(request_line: str) -> tuple[str, int] | None:
    """(host, port) a proxy request asks for, or None when it is not a proxy request."""
    parts = request_line.split()
    if len(parts) != 3:
        return None
    method, target, _ = parts
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        return (host, int(port)) if host and port.isdigit() else None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    return url.hostname, url.port or 80


def _relay(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(RELAY_CHUNK):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class HostFilterProxy:
    """``HostFilterProxy(allowed).start()``; ``socket_path`` is what the sandbox binds."""

    def __init__(self, allowed: tuple[str, ...]):
        self.allowed = allowed
        self.folder = tempfile.mkdtemp(prefix="mini-letta-proxy-")
        self.socket_path = os.path.join(self.folder, "proxy.sock")
        self.refused: list[str] = []
        self._server: socket.socket | None = None

    def start(self) -> HostFilterProxy:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(self.socket_path)
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, name="sandbox-proxy", daemon=True).start()
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        shutil.rmtree(self.folder, ignore_errors=True)

    def _accept(self) -> None:
        while self._server is not None:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < HEADER_LIMIT:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            target = _target(request_line)
            if target is None:
                self._answer(client, 400, "mini-letta sandbox proxy: only CONNECT and absolute http:// requests")
                return
            host, port = target
            if not host_allowed(host, self.allowed):
                self.refused.append(host)
                self._answer(client, 403, f"mini-letta sandbox: {host} is not an allowed host (allowed: "
                                          f"{', '.join(self.allowed)}; the \"network\" list in settings.json)")
                return
            try:
                upstream = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
            except OSError as error:
                self._answer(client, 502, f"mini-letta sandbox proxy: cannot reach {host}:{port} ({error})")
                return
            with upstream:
                upstream.settimeout(None)
                if request_line.upper().startswith("CONNECT"):
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    upstream.sendall(head)  # the request as sent: servers accept the absolute form
                back = threading.Thread(target=_relay, args=(upstream, client), daemon=True)
                back.start()
                _relay(client, upstream)
                back.join()

    @staticmethod
    def _answer(client: socket.socket, status: int, text: str) -> None:
        body = (text + "\n").encode()
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
        client.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                       f"Connection: close\r\nX-Mini-Letta-Sandbox: refused\r\n\r\n".encode() + body)
