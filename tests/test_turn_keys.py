"""The keys read during a turn (repl/turn_keys.py): parsed the same whatever the reads' boundaries
(a loaded machine joins and splits them), escape sequences dropped whole, Esc interrupting the turn
once, and the terminal's mode restored however the turn ends."""

import os
import select
import signal
import termios
import threading
import time

import pytest

from mini_letta.repl.key_parser import KeyParser
from mini_letta.repl.turn_keys import LEAVE, TurnKeys


class Keys:
    def __init__(self):
        self.escapes = 0
        self.text = ""
        self.parser = KeyParser(self.escape, self.add)

    def escape(self):
        self.escapes += 1

    def add(self, text):
        self.text += text

    def feed(self, *pieces: bytes, pause=True):
        for piece in pieces:
            self.parser.feed(piece)
        if pause:
            self.parser.pause()
        return self


def test_an_esc_at_the_end_of_a_read_with_text_is_pressed_alone_once_nothing_follows():
    keys = Keys().feed(b"next question\x1b", pause=False)
    assert (keys.text, keys.escapes) == ("next question", 0)  # it may still be an arrow's start
    keys.parser.pause()
    assert keys.escapes == 1


def test_esc_esc_is_two_escapes_in_one_read_or_two():
    assert Keys().feed(b"\x1b\x1b").escapes == 2
    assert Keys().feed(b"\x1b", b"\x1b").escapes == 2


@pytest.mark.parametrize("sequence", [b"\x1b[A", b"\x1b[1;5C", b"\x1bOP", b"\x1bx", b"\x1b\x1b[D", b"\x1b[20;1R",
                                      b"\x1b[200~"])
def test_escape_sequences_are_dropped_whole_also_when_split_between_reads(sequence):
    whole = Keys().feed(b"ab" + sequence + b"c")
    assert (whole.text, whole.escapes) == ("abc", 0)
    for cut in range(1, len(sequence)):
        split = Keys().feed(b"ab" + sequence[:cut], sequence[cut:] + b"c")
        assert (split.text, split.escapes) == ("abc", 0), cut


def test_an_unfinished_sequence_is_dropped_when_nothing_follows():
    keys = Keys().feed(b"ab\x1b[1;")
    assert (keys.text, keys.escapes) == ("ab", 0)


def test_a_character_split_between_reads_is_kept():
    encoded = "café ☕".encode()
    keys = Keys().feed(encoded[:4], encoded[4:-1], encoded[-1:])
    assert keys.text == "café ☕"


@pytest.fixture
def terminal():
    """A pseudo-terminal: (the end a person types into, a stream whose fileno is the program's end)."""
    master, slave = os.openpty()

    class Stream:
        def fileno(self):
            return slave

    yield master, Stream()
    os.close(master)
    os.close(slave)


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the state never came"
        threading.Event().wait(0.01)


def test_typing_is_kept_arrows_are_not_and_the_mode_comes_back(terminal):
    master, stream = terminal
    before = termios.tcgetattr(stream.fileno())
    keys = TurnKeys(stream)
    with keys:
        during = termios.tcgetattr(stream.fileno())
        assert not during[3] & (termios.ECHO | termios.ICANON)
        os.write(master, b"first line\r")
        os.write(master, b"sec\x1b[Dond\x1b[20;1R")
        wait_for(lambda: keys.typed == "second")
    assert keys.sent == ["first line"]
    assert termios.tcgetattr(stream.fileno()) == before


def test_the_mode_comes_back_when_the_turn_raises(terminal):
    _, stream = terminal
    before = termios.tcgetattr(stream.fileno())
    with pytest.raises(RuntimeError), TurnKeys(stream):
        raise RuntimeError("the turn failed")
    assert termios.tcgetattr(stream.fileno()) == before


def test_esc_interrupts_once_however_many_follow(terminal):
    master, stream = terminal
    before = termios.tcgetattr(stream.fileno())
    keys = TurnKeys(stream)
    interrupts = 0
    with keys:
        try:
            os.write(master, b"\x1b")
            threading.Event().wait(20)
        except KeyboardInterrupt:
            interrupts += 1
        # More Escs while the interrupted turn winds up: a second SIGINT would land in that code.
        os.write(master, b"\x1b")
        os.write(master, b"\x1b\x1bz\r")
        wait_for(lambda: keys.sent == [""])
    assert interrupts == 1
    assert termios.tcgetattr(stream.fileno()) == before


def test_keys_pressed_while_paused_are_left_for_the_question(terminal):
    master, stream = terminal
    keys = TurnKeys(stream)
    with keys:
        with keys.paused():
            os.write(master, b"y")
            assert select.select([stream.fileno()], [], [], 20)[0]
            assert os.read(stream.fileno(), 10) == b"y"
        os.write(master, b"after\r")
        wait_for(lambda: keys.sent == ["after"])


def test_no_terminal_means_no_reader():
    with TurnKeys(open(os.devnull)) as keys:
        pass
    assert (keys.typed, keys.sent) == ("", [])


def test_the_ctrl_z_handler_is_the_one_from_before_the_turn_after_it(terminal):
    _, stream = terminal
    before = signal.getsignal(signal.SIGTSTP)
    with TurnKeys(stream):
        assert signal.getsignal(signal.SIGTSTP) is not before
    assert signal.getsignal(signal.SIGTSTP) is before


def test_a_half_read_esc_is_forgotten_when_a_question_takes_over():
    keys = Keys().feed(b"\x1b", pause=False)
    keys.parser.forget()
    keys.parser.pause()
    assert keys.escapes == 0


def test_the_mode_comes_back_when_ctrl_c_comes_as_the_turn_starts(terminal):
    _, stream = terminal
    before = termios.tcgetattr(stream.fileno())

    class InterruptedWhileStarting(TurnKeys):
        def _follow_suspend(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt), InterruptedWhileStarting(stream):
        pass
    assert termios.tcgetattr(stream.fileno()) == before


def test_ctrl_d_on_an_empty_line_is_kept_as_leaving_and_inside_a_line_is_not(terminal):
    master, stream = terminal
    keys = TurnKeys(stream)
    with keys:
        os.write(master, b"run this\r\x04")
        os.write(master, b"half\x04")
        wait_for(lambda: keys.typed == "half")
    assert keys.sent == ["run this", LEAVE]
