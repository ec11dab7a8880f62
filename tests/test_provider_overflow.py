"""Context-overflow errors as real servers and proxies word them: llama.cpp, vLLM, TGI, LM Studio,
Ollama, and LiteLLM's wrapping of an upstream body into its message string (REFERENCE.md §6)."""

from __future__ import annotations

import json

import pytest

from mini_letta.errors import ContextOverflowError
from mini_letta.providers.errors_map import classify_overflow, status_error

LLAMA_BODY = {"error": {"code": 400, "message": "request (4276 tokens) exceeds the available context size "
                                                "(4096 tokens), try increasing it",
                        "type": "exceed_context_size_error", "n_prompt_tokens": 4276, "n_ctx": 4096}}


@pytest.mark.parametrize("status, message, expected", [
    (400, "request (4276 tokens) exceeds the available context size (4096 tokens), try increasing it",
     (True, 4096, 4276)),
    (400, "input (5000 tokens) is larger than the max context size (4096 tokens). skipping", (True, 4096, 5000)),
    (400, "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that",
     (True, 8192, 9000)),
    (400, "This model's maximum context length is 8192 tokens. However, you requested 9100 tokens "
          "(8900 in the messages, 200 in the completion).", (True, 8192, 9100)),
    (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` "
          "tokens and 200 `max_new_tokens`", (True, 4096, 4000)),
    (400, "Trying to keep the first 5012 tokens when context the overflows. However, the model is loaded with "
          "context length of only 4096 tokens, which is not enough.", (True, 4096, None)),
    # LiteLLM: the upstream llama.cpp body inside the message string, numbers only as quoted fields.
    (400, "litellm.ContextWindowExceededError: litellm.BadRequestError: OpenAIException - "
          + json.dumps({"error": {"code": 400, "message": "context overflow", "type": "exceed_context_size_error",
                                  "n_prompt_tokens": 3031, "n_ctx": 2048}}), (True, 2048, 3031)),
])
def test_overflow_wordings_of_real_servers_name_the_window(status, message, expected):
    assert classify_overflow(status, message) == expected


def test_llama_cpp_error_body_fields_give_the_numbers():
    error = status_error("openai", 400, LLAMA_BODY, "Error code: 400", model="m", key_env="OPENAI_API_KEY")
    assert isinstance(error, ContextOverflowError) and (error.limit, error.actual) == (4096, 4276)


def test_llama_cpp_overflow_type_is_an_overflow_even_without_familiar_words():
    body = {"error": {"code": 400, "message": "context is full", "type": "exceed_context_size_error",
                      "n_prompt_tokens": 2100, "n_ctx": 2048}}
    error = status_error("anthropic", 400, body, "", model="m", key_env="ANTHROPIC_API_KEY")
    assert isinstance(error, ContextOverflowError) and (error.limit, error.actual) == (2048, 2100)


def test_numbers_deep_inside_a_long_proxy_message_are_still_found():
    # The one-line detail shown to the user is clipped to 300 characters; classification is not.
    inner = json.dumps(LLAMA_BODY)
    message = "litellm.ContextWindowExceededError: " + "upstream said: " * 40 + inner
    error = status_error("openai", 400, {"error": {"message": message}}, "", model="m", key_env="OPENAI_API_KEY")
    assert isinstance(error, ContextOverflowError) and (error.limit, error.actual) == (4096, 4276)
    assert len(str(error)) < 450
