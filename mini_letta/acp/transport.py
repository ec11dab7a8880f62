"""JSON-RPC 2.0 messages over stdio, one JSON object a line (ACP's framing), that never ends on bad input.

The SDK's own line transport logs a line that is not JSON and drops it, and a line that is JSON but
not an object (``[1]``, ``"x"``) stops its receive loop. Here either gets the JSON-RPC error the
spec names (-32700 parse error, -32600 invalid request, ``id`` null), and the next line is read.
The protocol's output is a file descriptor of its own: whatever else writes to standard output
(a library, a child process) is sent to standard error instead, so it cannot corrupt a message.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from typing import Any, BinaryIO

from mini_letta.settings import SETTINGS



def claim_stdout() -> BinaryIO:
    """The protocol's output: the real standard output, moved to a descriptor of its own; descriptor
    1 then points at standard error for everything else."""
    protocol = os.dup(sys.stdout.fileno())
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return os.fdopen(protocol, "wb", buffering=0)


def error_reply(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def problem(message: Any) -> tuple[int, str] | None:
    """Why a decoded message is not a JSON-RPC request, notification or response, or None."""
    if not isinstance(message, dict):
        return -32600, "Invalid request: a message is a JSON object"
    if "method" in message:
        if not isinstance(message["method"], str):
            return -32600, "Invalid request: method must be a string"
        if "params" in message and not isinstance(message["params"], (dict, list, type(None))):
            return -32600, "Invalid request: params must be an object"
        if "id" in message and not isinstance(message["id"], (str, int, type(None))):
            return -32600, "Invalid request: id must be a string or a number"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None
    return -32600, "Invalid request: neither a request nor a response"


class LineTransport:
    """The SDK's ``Transport`` (``send``, ``receive``, ``close``) over a reader and a binary output."""

    def __init__(self, reader: asyncio.StreamReader, output: BinaryIO):
        self.reader = reader
        self.output = output
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    async def over_stdio(cls, output: BinaryIO) -> LineTransport:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=SETTINGS.acp.line_limit_bytes)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        return cls(reader, output)

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:  # messages are small and the client reads them: a plain write is enough
            if self._closed:
                raise ConnectionError("the client's end is closed")
            try:
                self.output.write(data)
            except (BrokenPipeError, ValueError, OSError) as error:
                self._closed = True
                raise ConnectionError("the client's end is closed") from error

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                await self._refuse(None, -32700, "Parse error: the line is not JSON")
                continue
            why = problem(message)
            if why is not None:
                request_id = message.get("id") if isinstance(message, dict) else None
                await self._refuse(request_id if isinstance(request_id, (str, int)) else None, *why)
                continue
            return message

    async def _read_line(self) -> bytes | None:
        try:
            line = await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:
            return end.partial or None
        except asyncio.LimitOverrunError as over:
            # Skip the whole line: its start is gone, so it cannot be read as a message.
            await self.reader.readexactly(over.consumed)
            while True:
                try:
                    await self.reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as more:
                    await self.reader.readexactly(more.consumed)
                except asyncio.IncompleteReadError:
                    return None
            await self._refuse(None, -32600, f"Invalid request: a message is longer than {SETTINGS.acp.line_limit_bytes:,} bytes")
            return b""
        return line

    async def _refuse(self, request_id: Any, code: int, message: str) -> None:
        try:
            await self.send(error_reply(request_id, code, message))
        except ConnectionError:
            pass

    async def close(self) -> None:
        with self._lock:
            self._closed = True
            try:
                self.output.close()
            except OSError:
                pass
