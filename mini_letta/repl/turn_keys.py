"""Keys pressed while a reply streams: Esc interrupts it like Ctrl-C, and what is typed meanwhile
becomes the start of the next prompt instead of being echoed into the reply.

During a turn nothing else reads the terminal, so the kernel echoed what was typed into the middle
of the streamed text, and prompt_toolkit then showed it again at the next prompt (a duplicate
line). Here echo and line editing are off for the turn (signals stay on: Ctrl-C still raises
``KeyboardInterrupt``), and a thread reads the keys: a lone Esc sends the process SIGINT, the same
path as Ctrl-C; printable text is kept for the next prompt, and a line sent with Enter runs next,
as it did when the terminal kept it. A question asked during the turn (an
approval) reads the terminal itself: ``paused()`` stops the thread while it is open.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import termios
import threading

POLL_SECONDS = 0.05
# A lone Esc is told from the start of an arrow key's sequence by this pause.
ESCAPE_PAUSE_SECONDS = 0.05


class TurnKeys:
    def __init__(self, stream=None):
        self._stream = stream or sys.stdin
        self._saved = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._reading = threading.Event()
        self._typed: list[str] = []
        self._sent: list[str] = []

    @property
    def typed(self) -> str:
        """What was typed during the turn after its last Enter, for the next prompt."""
        return "".join(self._typed)

    @property
    def sent(self) -> list[str]:
        """Lines typed and sent with Enter during the turn, in order: they run next."""
        return list(self._sent)

    def __enter__(self) -> TurnKeys:
        try:
            fd = self._stream.fileno()
            if not os.isatty(fd):
                return self
            self._saved = termios.tcgetattr(fd)
        except (OSError, ValueError, termios.error, AttributeError):
            return self
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        self._reading.set()
        self._thread = threading.Thread(target=self._read, args=(fd,), name="mini-letta-turn-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._reading.set()
        if self._thread is not None:
            self._thread.join()
        if self._saved is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self._stream.fileno(), termios.TCSANOW, self._saved)

    @contextlib.contextmanager
    def paused(self):
        """While a question reads the terminal itself."""
        self._reading.clear()
        try:
            yield
        finally:
            if not self._stop.is_set():
                self._reading.set()

    def _read(self, fd: int) -> None:
        while not self._stop.is_set():
            self._reading.wait()
            if self._stop.is_set():
                return
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if not ready or not self._reading.is_set():
                continue
            data = os.read(fd, 1024)
            if data == b"\x1b" and not select.select([fd], [], [], ESCAPE_PAUSE_SECONDS)[0]:
                os.kill(os.getpid(), signal.SIGINT)  # Esc: interrupt, as Ctrl-C does
                continue
            self._keep(data.decode("utf-8", errors="ignore"))

    def _keep(self, text: str) -> None:
        for char in text:
            if char in "\r\n":
                self._sent.append("".join(self._typed))
                self._typed = []
            elif char in "\x7f\b":
                if self._typed:
                    self._typed.pop()
            elif char.isprintable():
                self._typed.append(char)
