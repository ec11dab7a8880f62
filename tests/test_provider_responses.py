"""The OpenAI Responses provider against the fake Responses server over real HTTP (nothing patched):
what only this API has (reasoning items carried back sealed, ``store: false``, ``include``,
``incomplete_details``, ``response.failed``, output phases) and which models it is chosen for.
What it shares with Chat Completions runs in tests/test_provider_openai.py on both."""

from __future__ import annotations

import json

import pytest
from fakes import Fault, Reply, ask, stream_all
from fakes.responses_server import FakeResponsesServer, overflow_body, responses_usage

from mini_letta import endings
from mini_letta.errors import ContextOverflowError, ProviderError
from mini_letta.messages import Image, Message, ToolSpec
from mini_letta.providers import create_provider
from mini_letta.providers.base import Request
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.providers.openai_responses import ResponsesProvider
from mini_letta.providers.responses_wire import reasons, responses_only
from mini_letta.resources import data
from mini_letta.sessions.store import SessionWriter, load_session

READ_FILE = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
CODEX = "gpt-5.1-codex"


@pytest.fixture
def server():
    with FakeResponsesServer() as fake:
        yield fake


@pytest.fixture
def provider(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return create_provider("openai-responses", CODEX, server.base_url, timeout=2, max_retries=0)


def _tool_step(server, provider) -> list[Message]:
    """A user message, the model's reasoning, text and a call, and the call's result."""
    server.enqueue(Reply(text="Reading.", reasoning="The file is short; read it first.",
                         tool_calls=[("call_1", "read_file", '{"path": "a.py"}')]))
    history = [Message.user("what does a.py do?")]
    _, reply = stream_all(provider, Request("sys", history, [READ_FILE]))
    return history + [reply, Message.tool_result(reply.tool_calls[0], "print('a')")]


# --- the request ---------------------------------------------------------------------------------
def test_the_request_is_stateless_with_instructions_a_reply_limit_and_the_cache_key(server, provider):
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask(max_tokens=321, cache_key="session-1", tools=[READ_FILE]))
    body = server.completions()[0].body
    assert body["instructions"] == "You are terse."
    assert body["input"] == [{"type": "message", "role": "user", "content": "hi"}]
    assert (body["store"], body["stream"], body["max_output_tokens"]) == (False, True, 321)
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == "session-1"
    assert body["tools"] == [{"type": "function", "name": "read_file", "description": "Read a file.",
                              "parameters": READ_FILE.parameters, "strict": False}]
    assert "previous_response_id" not in body and "max_tokens" not in body


def test_a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.enqueue(Reply(text="ok"))
    stream_all(create_provider("openai-responses", "gpt-4.1", server.base_url, max_retries=0), ask())
    assert "include" not in server.completions()[0].body


def test_reasoning_is_carried_back_sealed_before_the_text_and_calls_it_came_with(server, provider):
    history = _tool_step(server, provider)
    assert history[1].meta["reasoning"]["model"] == CODEX
    server.enqueue(Reply(text="It prints a."))
    _, final = stream_all(provider, Request("sys", history, [READ_FILE]))
    assert final.text == "It prints a."
    sent = server.completions()[-1].body["input"]
    assert [item["type"] for item in sent] == ["message", "reasoning", "message", "function_call",
                                               "function_call_output"]
    assert sent[1]["encrypted_content"] == history[1].meta["reasoning"]["items"][0]["encrypted_content"]
    assert sent[3] == {"type": "function_call", "call_id": "call_1", "name": "read_file",
                       "arguments": '{"path": "a.py"}'}
    assert sent[4] == {"type": "function_call_output", "call_id": "call_1", "output": "print('a')"}
    assert server.malformed == 0


def test_reasoning_goes_to_no_other_model(server, provider):
    """A summarizer on another model gets the messages without the sealed items (which it would reject)."""
    history = _tool_step(server, provider)
    server.enqueue(Reply(text="A summary."))
    _, summary = stream_all(provider, Request("sys", history, model="gpt-5-mini"))
    assert summary.text == "A summary." and server.malformed == 0
    assert "reasoning" not in [item["type"] for item in server.completions()[-1].body["input"]]


def test_a_model_that_refuses_encrypted_reasoning_is_asked_again_without_it_once(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = create_provider("openai-responses", "o3-new", server.base_url, max_retries=0)
    server.enqueue(Fault(400, "Encrypted content is not supported with this model."), Reply(text="ok"), Reply(text="again"))
    assert stream_all(provider, ask())[1].text == "ok"
    assert stream_all(provider, ask())[1].text == "again"
    assert ["include" in r.body for r in server.completions()] == [True, False, False]


def test_an_assistant_phase_is_sent_back(server, provider):
    message = Message.assistant("Looking into it.", meta={"phase": "commentary"})
    server.enqueue(Reply(text="ok"))
    stream_all(provider, Request("sys", [Message.user("go"), message, Message.user("and?")]))
    assert server.completions()[0].body["input"][1] == {"type": "message", "role": "assistant",
                                                        "content": "Looking into it.", "phase": "commentary"}


def test_images_go_as_input_images_and_a_summary_as_user_text(server, provider):
    server.enqueue(Reply(text="ok"))
    history = [Message.user("Earlier history was compacted: ...", kind="summary"),
               Message.user("what is this?", images=[Image("image/png", "iVBORw0KGgo=")])]
    stream_all(provider, Request("sys", history))
    sent = server.completions()[0].body["input"]
    assert sent[0] == {"type": "message", "role": "user", "content": "Earlier history was compacted: ..."}
    assert sent[1]["content"] == [{"type": "input_text", "text": "what is this?"},
                                  {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBORw0KGgo="}]


# --- the reply -----------------------------------------------------------------------------------
def test_usage_splits_cache_reads_and_writes_out_and_keeps_reasoning_out_of_the_context(server, provider):
    usage = responses_usage(1000, 700, cached=600, reasoning=650)
    usage["input_tokens_details"]["cache_write_tokens"] = 300
    server.enqueue(Reply(text="short", usage=usage))
    _, message = stream_all(provider, ask())
    assert (message.usage.input_tokens, message.usage.cache_read_tokens, message.usage.cache_write_tokens) == (100, 600, 300)
    assert message.usage.prompt_tokens == 1000 and message.usage.context_tokens == 1050


@pytest.mark.parametrize("reason, ending", [("max_output_tokens", endings.MAX_TOKENS),
                                            ("content_filter", endings.CONTENT_FILTER)])
def test_an_incomplete_response_ends_by_its_reason(server, provider, reason, ending):
    server.enqueue(Reply(text="the first half", stop_reason=reason))
    _, message = stream_all(provider, ask())
    assert endings.ending(message) == ending and message.text == "the first half"


@pytest.mark.parametrize("in_stream", [False, True], ids=["http-400", "response.failed"])
def test_the_responses_overflow_wording_is_an_overflow_before_or_inside_the_stream(server, provider, in_stream):
    server.n_ctx, server.overflow_in_stream = 50, in_stream
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask("word " * 200))
    assert "too long for the model's context window" in str(caught.value)
    assert "Your input exceeds the context window" in str(caught.value)


def test_a_failed_response_mid_stream_is_a_provider_error_and_not_resent(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = create_provider("openai-responses", CODEX, server.base_url, max_retries=2)
    server.stream_errors = "response.failed"
    server.enqueue(Reply(text="partial", error_after=3, error_body={"error": {"code": "server_error",
                                                                              "message": "The model crashed."}}))
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert "openai-responses reported an error during the reply: The model crashed" in str(caught.value)
    assert len(server.completions()) == 1


def test_an_overflow_body_from_a_fault_names_no_numbers(server, provider):
    server.enqueue(Fault(400, body=overflow_body()))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert (caught.value.limit, caught.value.actual, caught.value.status) == (None, None, 400)


def test_a_whole_response_body_is_read_as_the_reply(server, provider):
    class Whole(FakeResponsesServer):
        def serve_completion(self, handler, request):
            handler.send_json(200, {"id": "resp_1", "object": "response", "status": "completed", "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc_x"},
                {"type": "message", "id": "m1", "role": "assistant", "phase": "final_answer",
                 "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "read_file", "arguments": "{}"}],
                "usage": responses_usage(40, 5)})

    with Whole() as whole:
        reply = stream_all(create_provider("openai-responses", CODEX, whole.base_url, max_retries=0), ask())[1]
    assert reply.text == "Done." and [(c.id, c.name) for c in reply.tool_calls] == [("call_9", "read_file")]
    assert reply.meta["phase"] == "final_answer" and reply.meta["reasoning"]["items"][0]["id"] == "rs_1"
    assert reply.usage.input_tokens == 40 and reply.stop_reason == "tool_use"


# --- which models, and where it came from ----------------------------------------------------------
@pytest.mark.parametrize("model", ["gpt-5-codex", "gpt-5.1-codex-max", "gpt-5.2-codex", "codex-mini-latest",
                                   "o3-pro", "o1-pro-2025-03-19", "gpt-5-pro", "gpt-5.5-pro-2026-04-23",
                                   "o3-deep-research", "computer-use-preview"])
def test_models_served_by_the_responses_api_alone_get_it_from_the_openai_provider(model, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert responses_only(model)
    assert isinstance(create_provider("openai", model), ResponsesProvider)


@pytest.mark.parametrize("model", ["gpt-4.1", "gpt-5", "gpt-5.1", "o3", "gpt-4o-mini"])
def test_other_models_stay_on_chat_completions(model, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = create_provider("openai", model)
    assert not responses_only(model) and type(provider) is OpenAIProvider


def test_which_models_reason_is_data_with_its_source():
    note = data("responses_models.json")["_comment"]
    assert "ResponsesModel" in note and "ChatModel" in note
    assert reasons("gpt-5.1-codex") and reasons("o4-mini") and reasons("gpt-5[1m]")
    assert not reasons("gpt-4.1") and not reasons("gpt-5-chat-latest") and not reasons("gpt-4o")


def test_the_provider_name_is_accepted_where_providers_are_chosen(monkeypatch):
    from mini_letta.app import Options, choose_provider

    assert choose_provider(Options(provider="openai-responses")) == "openai-responses"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert create_provider("openai-responses").model == "gpt-4.1"


# --- the session file ------------------------------------------------------------------------------
def test_sealed_reasoning_survives_the_session_file_byte_for_byte(tmp_path):
    """The masking of secrets must not touch sealed content, however secret-like its bytes look."""
    sealed = "gAAAAABo" + "AKIAZ7QWERTYUIOPASDF" + "x9Qv3LmN8pRt2YwZ5bKc7HjD4fGs6AeU1iO0lPq" * 3
    message = Message.assistant("ok", meta={"reasoning": {"model": CODEX, "items": [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed}]}})
    with SessionWriter.create(tmp_path / "home", tmp_path, "openai-responses", CODEX) as session:
        session.append_message(Message.user("hi"))
        session.append_message(message)
    loaded = load_session(session.path).all_messages[-1]
    assert loaded.meta["reasoning"]["items"][0]["encrypted_content"] == sealed
    assert "AKIAZ7QWERTYUIOPASDF" in json.dumps(loaded.meta)
