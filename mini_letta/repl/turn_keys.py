"""Keys pressed while a reply streams: Esc interrupts it like Ctrl-C, and what is typed meanwhile
becomes the start of the next prompt (a line sent with Enter runs next; Ctrl-D on an empty line
leaves after the turn). ``paused()`` while a question reads the terminal itself. Why echo is off
and how the bytes become keys: ``docs/repl.md``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import termios
import threading

from mini_letta.repl.key_parser import KeyParser

POLL_SECONDS = 0.05
# A lone Esc is told from the start of an arrow key's sequence by this pause; a terminal writes a
# whole sequence at once, so the pause only has to cover the gap between two reads.
ESCAPE_PAUSE_SECONDS = 0.05
# In ``sent``: Ctrl-D pressed on an empty line.
LEAVE = None


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
