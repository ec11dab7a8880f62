"""One notice channel per run (issue 33 item 4): ``notices.Notices``, handed down as ``say``."""

from __future__ import annotations

import threading

from mini_letta.notices import Notices, prefixed


# --- the channel ----------------------------------------------------------------------------------
def test_each_text_is_said_once_per_channel_even_after_it_was_taken():
    channel = Notices()
    channel.say("Ignoring settings.json: it is not valid JSON.")
    assert channel.pending()
    assert channel.take() == ["Ignoring settings.json: it is not valid JSON."]
    channel.say("Ignoring settings.json: it is not valid JSON.")  # a second reader of the same file
    channel.say("another")
    assert channel.take() == ["another"] and not channel.pending()


def test_two_channels_share_nothing():
    first, second = Notices(), Notices()
    first.say("one")
    assert second.take() == [] and first.take() == ["one"]
    second.say("one")  # said in the other run: said here too
    assert second.take() == ["one"]


def test_two_threads_taking_never_both_get_a_text():
    channel = Notices()
    texts = [f"notice {n}" for n in range(2000)]
    taken: list[list[str]] = [[], []]

    def take(into: list[str]) -> None:
        while len(taken[0]) + len(taken[1]) < len(texts):
            into.extend(channel.take())

    threads = [threading.Thread(target=take, args=(box,)) for box in taken]
    for thread in threads:
        thread.start()
    for text in texts:
        channel.say(text)
    for thread in threads:
        thread.join()
    assert sorted(taken[0] + taken[1]) == sorted(texts)


def test_the_listener_is_told_after_a_new_text_only():
    told = []
    channel = Notices(on_said=lambda: told.append(channel.pending()))
    channel.say("x")
    channel.say("x")
    assert told == [True]


def test_a_prefixed_say_names_who_said_it():
    channel = Notices()
    prefixed(channel.say, "Subagent explore")("compacted")
    assert channel.take() == ["Subagent explore: compacted"]
