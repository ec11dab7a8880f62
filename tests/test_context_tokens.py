"""Local token counting: verified offline tokenizer files, per-message caching, chars/4 fallback."""

import binascii
import gzip
import threading

import pytest

from mini_letta.context import IMAGE_TOKENS, TokenCounter, counter_for_model, encoding_for_model, estimate_chars
from mini_letta.context import tokens as tokens_module
from mini_letta.messages import Image, Message, ToolCall, ToolSpec


@pytest.fixture
def tiktoken_cache(tmp_path, monkeypatch):
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return cache


def test_o200k_counts_hello_world_as_official_ids():
    counter = TokenCounter("o200k_base")
    encoding = counter._tokenizer.get()
    assert encoding.encode("hello world") == [24912, 2375]
    assert counter.exact
    assert counter.count_text("hello world") == 2


def test_cl100k_counts_hello_world_as_official_ids():
    encoding = TokenCounter("cl100k_base")._tokenizer.get()
    assert encoding.encode("hello world") == [15339, 1917]


def test_loading_uses_no_network_and_writes_nothing_to_tiktoken_cache(tiktoken_cache, no_network):
    counter = TokenCounter("o200k_base", bpe_file=tokens_module.bundled_bpe_file("o200k_base"))
    assert counter.count_text("def main():\n    return 0\n") > 0
    assert counter.exact
    assert no_network == []
    assert list(tiktoken_cache.iterdir()) == []


def test_patterns_and_special_tokens_match_installed_tiktoken(monkeypatch):
    from tiktoken_ext import openai_public

    # Run tiktoken's own constructors with the download replaced, to read their definitions.
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})
    for name in ("o200k_base", "cl100k_base"):
        definition = getattr(openai_public, name)()
        assert tokens_module._PATTERNS[name] == definition["pat_str"]
        assert tokens_module._SPECIAL_TOKENS[name] == definition["special_tokens"]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_official_files_rank_each_token_by_its_line_as_the_loader_assumes(name):
    fields = gzip.decompress(tokens_module.bundled_bpe_file(name).read_bytes()).split()
    assert [int(rank) for rank in fields[1::2]] == list(range(len(fields) // 2))
    encoding = tokens_module.load_encoding(name)
    assert encoding._mergeable_ranks == dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2])))


def test_tampered_file_is_rejected_and_counting_falls_back_with_one_notice(tmp_path):
    data = bytearray(gzip.decompress(tokens_module.bundled_bpe_file("o200k_base").read_bytes()))
    data[100] ^= 0x01
    tampered = tmp_path / "o200k_base.tiktoken.gz"
    tampered.write_bytes(gzip.compress(bytes(data)))

    counter = TokenCounter("o200k_base", bpe_file=tampered)
    assert counter.count_text("a" * 10) == 3  # ceil(10 / 4)
    assert counter.count_text("b" * 8) == 2
    assert not counter.exact
    assert "4 characters per token" in counter.problem() and "o200k_base" in counter.problem()


def test_missing_file_falls_back_to_chars_over_four(tmp_path):
    counter = TokenCounter("cl100k_base", bpe_file=tmp_path / "absent.tiktoken.gz")
    message = Message.user("x" * 41)
    assert counter.count_message(message) == tokens_module.MESSAGE_OVERHEAD + 11
    assert "4 characters per token" in counter.problem()


def test_uncompressed_verified_file_is_accepted(tmp_path):
    plain = tmp_path / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress(tokens_module.bundled_bpe_file("cl100k_base").read_bytes()))
    assert TokenCounter("cl100k_base", bpe_file=plain)._tokenizer.get().encode("hello world") == [15339, 1917]


def test_concurrent_first_use_loads_once_and_agrees(tmp_path):
    counter = TokenCounter("cl100k_base", bpe_file=tokens_module.bundled_bpe_file("cl100k_base"))
    results = []
    threads = [threading.Thread(target=lambda: results.append(counter.count_text("hello world"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [2] * 8
    assert counter.problem() is None


def test_unknown_encoding_name_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown encoding"):
        TokenCounter("p50k_base")


def test_message_count_includes_framing_text_tool_calls_and_images():
    counter = TokenCounter("o200k_base")
    call = ToolCall("call_1", "read_file", '{"path": "src/main.py"}')
    plain = Message.assistant("hello world")
    with_call = Message.assistant("hello world", [call])
    with_image = Message.user("hello world", images=[Image("image/png", "AAAA"), Image("image/png", "BBBB")])

    text = counter.count_text("hello world")
    assert counter.count_message(plain) == tokens_module.MESSAGE_OVERHEAD + text
    assert counter.count_message(with_call) == (
        counter.count_message(plain)
        + tokens_module.TOOL_CALL_OVERHEAD
        + counter.count_text("read_file")
        + counter.count_text(call.arguments)
    )
    assert counter.count_message(with_image) == counter.count_message(Message.user("hello world")) + 2 * IMAGE_TOKENS


def test_tool_result_counts_its_text_and_tool_name():
    counter = TokenCounter("o200k_base")
    call = ToolCall("call_1", "bash", "{}")
    result = Message.tool_result(call, "line one\nline two\n")
    assert counter.count_message(result) == (
        tokens_module.MESSAGE_OVERHEAD + counter.count_text("line one\nline two\n") + counter.count_text("bash")
    )


def test_special_token_text_in_a_log_is_counted_not_rejected():
    counter = TokenCounter("o200k_base")
    assert counter.count_text("<|endoftext|>") > 1


def test_message_edited_in_place_is_counted_again():
    counter = TokenCounter("o200k_base")
    message = Message.tool_result(ToolCall("c1", "bash", "{}"), "output line\n" * 500)
    before = counter.count_message(message)
    message.text = "[cleared]"
    message.meta["cleared"] = True
    after = counter.count_message(message)
    assert after < before
    assert after == tokens_module.MESSAGE_OVERHEAD + counter.count_text("[cleared]") + counter.count_text("bash")


def test_same_length_edit_invalidates_the_cache():
    counter = TokenCounter("o200k_base")
    message = Message.user("aaaa aaaa aaaa aaaa")
    first = counter.count_message(message)
    message.text = "a b c d e f g h i j"[: len(message.text)]
    assert len(message.text) == len("aaaa aaaa aaaa aaaa")
    assert counter.count_message(message) != first


def test_unchanged_message_is_not_recounted():
    counter = TokenCounter("o200k_base")
    message = Message.user("some text " * 100)
    counter.count_message(message)
    calls = []
    original = counter._count_uncached
    counter._count_uncached = lambda m: calls.append(m) or original(m)
    counter.count_message(message)
    counter.count_messages([message, Message.user("new")])
    assert len(calls) == 1  # only the new message


def test_tools_are_counted_as_their_json_schema():
    counter = TokenCounter("o200k_base")
    small = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    big = ToolSpec("read", "Read a file. " * 50, small.parameters)
    assert counter.count_tools([]) == 0
    assert counter.count_tools([small]) > counter.count_text("Read a file.")
    assert counter.count_tools([big]) > counter.count_tools([small])
    assert counter.count_tools([small, big]) == counter.count_tools([small]) + counter.count_tools([big])


def test_system_prompt_count_has_framing_and_empty_is_free():
    counter = TokenCounter("o200k_base")
    assert counter.count_system("") == 0
    assert counter.count_system("hello world") == tokens_module.MESSAGE_OVERHEAD + 2


def test_chars_estimate_rounds_up():
    assert estimate_chars("") == 0
    assert estimate_chars("abc") == 1
    assert estimate_chars("abcd") == 1
    assert estimate_chars("abcde") == 2
    assert TokenCounter(None).count_text("abcde") == 2


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("claude-sonnet-4-5", "o200k_base"),
        ("llama3.2:latest", "o200k_base"),
        ("demo", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
    ],
)
def test_encoding_for_model(model, encoding):
    assert encoding_for_model(model) == encoding
    assert counter_for_model(model).encoding_name == encoding


def test_counter_for_model_is_shared_per_encoding():
    assert counter_for_model("gpt-4o") is counter_for_model("claude-opus-4")
    assert counter_for_model("gpt-4") is not counter_for_model("gpt-4o")
