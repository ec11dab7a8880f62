"""Keys pressed while a reply streams: Esc interrupts it like Ctrl-C, and what is typed meanwhile
becomes the start of the next prompt instead of being echoed into the reply.

During a turn nothing else reads the terminal, so the kernel echoed what was typed into the middle
of the streamed text, and prompt_toolkit then showed it again at the next prompt (a duplicate
line). Here echo and line editing are off for the turn (signals stay on: Ctrl-C still raises
``KeyboardInterrupt``), and a thread reads the keys: Esc sends the main thread SIGINT, the same
path as Ctrl-C; printable text is kept for the next prompt, a line sent with Enter runs next,
as it did when the terminal kept it, and Ctrl-D on an empty line leaves after the turn, as it
does at the prompt. A question asked during the turn (an
approval) reads the terminal itself: ``paused()`` stops the thread while it is open.

What a read returns depends on timing, not on what was pressed: under load one read can hold text
and an Esc, both Escs of Esc Esc, or a terminal's late answer to a cursor-position request. So the
bytes are parsed as keys (``KeyParser``) whatever the reads' boundaries, escape sequences (arrows,
Alt-keys, terminal answers) are dropped whole instead of leaving ``[A`` in the next prompt, and a
turn is interrupted at most once, never after it ended.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import signal
import sys
import termios
import threading
from typing import Callable

POLL_SECONDS = 0.05
# A lone Esc is told from the start of an arrow key's sequence by this pause; a terminal writes a
# whole sequence at once, so the pause only has to cover the gap between two reads.
ESCAPE_PAUSE_SECONDS = 0.05
ESC = "\x1b"
# In ``sent``: Ctrl-D pressed on an empty line.
LEAVE = None


class KeyParser:
    """Text read from the terminal, in pieces cut anywhere, turned into keys: ``on_escape`` for each
    Esc pressed alone, ``on_text`` for the rest with escape sequences taken out."""

    def __init__(self, on_escape: Callable[[], None], on_text: Callable[[str], None]):
        self._on_escape = on_escape
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.pending = ""  # the start of an escape sequence whose end has not been read yet

    def feed(self, data: bytes) -> None:
        text, self.pending = self.pending + self._decoder.decode(data), ""
        start = 0
        while (escape := text.find(ESC, start)) != -1:
            self._on_text(text[start:escape])
            end = _sequence_end(text, escape)
            if end is None:
                self.pending = text[escape:]
                return
            if end == escape + 1:
                self._on_escape()
            start = end
        self._on_text(text[start:])

    def forget(self) -> None:
        self.pending = ""
        self._decoder.reset()

    def pause(self) -> None:
        """Nothing more came: pending Escs were pressed alone; a pending sequence is dropped."""
        if self.pending.strip(ESC) == "":
            for _ in self.pending:
                self._on_escape()
        self.pending = ""


def _sequence_end(text: str, at: int) -> int | None:
    """Where the escape sequence starting at ``at`` ends (``at + 1`` for a lone Esc), or None when
    its end has not been read yet."""
    if at + 1 == len(text):
        return None
    second = text[at + 1]
    if second == ESC:
        # Esc Esc, or Alt with an arrow (Esc Esc [ A): the latter is no Esc pressed.
        if at + 2 == len(text):
            return None
        if text[at + 2] in "[O":
            return _sequence_end(text, at + 1)
        return at + 1
    if second == "[":  # CSI: parameters and intermediates (0x20-0x3F), then one final byte
        index = at + 2
        while index < len(text) and " " <= text[index] <= "?":
            index += 1
        return None if index == len(text) else index + 1
    if second == "O":  # SS3: one more character (F1-F4, arrows in application mode)
        return None if at + 2 == len(text) else at + 3
    return at + 2  # Alt with a key


class TurnKeys:
    def __init__(self, stream=None):
        self._stream = stream or sys.stdin
        self._fd: int | None = None
        self._saved = None
        self._quiet = None
        self._previous_handlers: dict[int, object] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._reading = threading.Event()
        # Held while deciding to interrupt and while the turn ends: no SIGINT after the turn ended.
        self._lock = threading.Lock()
        self._interrupted = False
        self._typed: list[str] = []
        self._sent: list[str | None] = []
        self._parser = KeyParser(self._interrupt, self._keep)

    @property
    def typed(self) -> str:
        """What was typed during the turn after its last Enter, for the next prompt."""
        return "".join(self._typed)

    @property
    def sent(self) -> list[str | None]:
        """Lines typed and sent with Enter during the turn, in order: they run next; ``LEAVE`` where
        Ctrl-D was pressed on an empty line."""
        return list(self._sent)

    def __enter__(self) -> TurnKeys:
        try:
            fd = self._stream.fileno()
            if not os.isatty(fd):
                return self
            self._saved = termios.tcgetattr(fd)
        except (OSError, ValueError, termios.error, AttributeError):
            return self
        self._fd = fd
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ICANON | termios.ECHO)
        # A read returns at once, even when another reader (an approval) took the key select saw:
        # the thread never blocks in read, so the turn's end never waits for a keystroke.
        quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 0, 0
        self._quiet = quiet
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            self._follow_suspend()
            self._reading.set()
            thread = threading.Thread(target=self._read, args=(fd,), name="mini-letta-turn-keys", daemon=True)
            thread.start()
            self._thread = thread
        except BaseException:  # Ctrl-C as the turn starts: ``__exit__`` will not run, restore here
            self._end()
            raise
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            with self._lock:
                self._stop.set()
        except KeyboardInterrupt:
            # The thread's SIGINT for an Esc read just before the turn ended, delivered here: the
            # reply is complete, so there is nothing left to interrupt.
            if exc_type is not None or not self._interrupted:
                self._end()
                raise
        self._end()

    def _end(self) -> None:
        self._stop.set()
        self._reading.set()
        try:
            if self._thread is not None:
                self._thread.join()
        finally:
            for signum, handler in self._previous_handlers.items():
                signal.signal(signum, handler)
            self._previous_handlers.clear()
            self._set_mode(self._saved)

    def _set_mode(self, mode) -> None:
        if mode is not None and self._fd is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self._fd, termios.TCSANOW, mode)

    def _follow_suspend(self) -> None:
        """Ctrl-Z during the turn: the shell gets the terminal as it was before the turn, and after
        ``fg`` the turn gets its own mode back (a shell resumes a job in the shell's mode, which
        echoed keys into the reply and held them until Enter)."""
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread

        def suspend(signum, frame):
            self._set_mode(self._saved)
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)  # stops here until the process is continued
            signal.signal(signal.SIGTSTP, suspend)
            if not self._stop.is_set():
                self._set_mode(self._quiet)

        self._previous_handlers[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, suspend)

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
            wait = ESCAPE_PAUSE_SECONDS if self._parser.pending else POLL_SECONDS
            ready, _, _ = select.select([fd], [], [], wait)
            if not self._reading.is_set():
                # A question took over: what was half read was meant for before it, like the keys
                # typed ahead that the question forgets (an Esc must not interrupt after it).
                self._parser.forget()
                continue
            if not ready:
                self._parser.pause()
                continue
            try:
                data = os.read(fd, 1024)
            except OSError:
                return  # the terminal went away
            if data:
                self._parser.feed(data)
            else:
                self._stop.wait(POLL_SECONDS)  # another reader took it, or the terminal hung up

    def _interrupt(self) -> None:
        """Esc: interrupt the turn as Ctrl-C does, once (a second SIGINT would land in the code
        that saves the interrupted reply)."""
        with self._lock:
            if self._stop.is_set() or self._interrupted:
                return
            self._interrupted = True
            # At the main thread itself: a blocking read there (waiting for the model) is woken.
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def _keep(self, text: str) -> None:
        for char in text:
            if char in "\r\n":
                self._sent.append("".join(self._typed))
                self._typed = []
            elif char == "\x04" and not self._typed:
                self._sent.append(LEAVE)
            elif char in "\x7f\b":
                if self._typed:
                    self._typed.pop()
            elif char.isprintable():
                self._typed.append(char)
