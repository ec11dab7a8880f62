"""Run inside the sandbox, in front of the command: ``127.0.0.1:PORT`` there → the host-filtering
proxy's Unix socket (:mod:`netproxy`), with ``HTTP_PROXY``/``HTTPS_PROXY`` set for the command.

Usage: ``python -I netbridge.py SOCKET -- COMMAND...``; exits with the command's exit status. Only
the standard library: it runs with ``-I``, outside mini-letta's environment.
"""

import os
import signal
import socket
import subprocess
import sys
import threading


# netproxy.py's _relay again, on purpose: this file runs alone under ``python -I`` inside the
# sandbox, where the mini_letta package cannot be imported.
def _relay(source, sink):
    try:
        while True:
            chunk = source.recv(65536)
            if not chunk:
                break
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(client, socket_path):
    with client:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(socket_path)
        except OSError:
            return
        with upstream:
            back = threading.Thread(target=_relay, args=(upstream, client), daemon=True)
            back.start()
            _relay(client, upstream)
            back.join()


def _accept(listener, socket_path):
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, socket_path), daemon=True).start()


def main(argv):
    socket_path, command = argv[0], argv[2:]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    proxy = "http://127.0.0.1:%d" % listener.getsockname()[1]
    env = dict(os.environ, HTTP_PROXY=proxy, HTTPS_PROXY=proxy, http_proxy=proxy, https_proxy=proxy)
    threading.Thread(target=_accept, args=(listener, socket_path), daemon=True).start()
    child = subprocess.Popen(command, env=env)
    # A SIGTERM for the group reaches the command too; wait for it rather than die first.
    signal.signal(signal.SIGTERM, lambda *_: None)
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
