"""Message.to_dict / from_dict, written out by hand for speed, say exactly what the dataclass says:
the same dict as ``dataclasses.asdict`` for any message, a faithful round trip, no shared state."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mini_letta.messages import Image, Message, ToolCall, Usage

_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
_json_values = st.recursive(_json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)), max_leaves=8)

messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "tool"]),
    text=st.text(max_size=20),
    tool_calls=st.lists(st.builds(ToolCall, st.text(max_size=6), st.text(max_size=6), st.text(max_size=12)),
                        max_size=3),
    tool_call_id=st.one_of(st.none(), st.text(max_size=6)),
    tool_name=st.one_of(st.none(), st.text(max_size=6)),
    is_error=st.booleans(),
    images=st.lists(st.builds(Image, st.just("image/png"), st.text(max_size=8)), max_size=2),
    kind=st.sampled_from(["normal", "summary"]),
    usage=st.one_of(st.none(), st.builds(Usage, *[st.integers(0, 10**6)] * 5)),
    stop_reason=st.one_of(st.none(), st.text(max_size=6)),
    seq=st.integers(0, 10**6),
    id=st.text(min_size=1, max_size=8),
    created=st.floats(allow_nan=False, allow_infinity=False),
    meta=st.dictionaries(st.text(max_size=6), _json_values, max_size=4),
)


@settings(max_examples=300)
@given(messages)
def test_to_dict_is_what_asdict_gives_and_from_dict_gives_the_message_back(message):
    data = message.to_dict()
    assert data == dataclasses.asdict(message)
    assert list(data) == [f.name for f in dataclasses.fields(Message)]
    assert Message.from_dict(json.loads(json.dumps(data))) == message


def test_the_dict_shares_nothing_mutable_with_the_message():
    call = ToolCall("c1", "read_file", "{}")
    message = Message.assistant("x", [call], usage=Usage(3, 4), meta={"cleared": {"by": ["l1"]}})
    data = message.to_dict()
    data["tool_calls"][0]["name"] = "changed"
    data["usage"]["input_tokens"] = 99
    data["meta"]["cleared"]["by"].append("l2")
    assert message.tool_calls[0].name == "read_file" and message.usage.input_tokens == 3
    assert message.meta == {"cleared": {"by": ["l1"]}}


def test_from_dict_leaves_out_unknown_keys_and_fills_missing_ones():
    message = Message.from_dict({"role": "user", "text": "hi", "id": "msg_1", "written_by": "a newer version",
                                 "tool_calls": None, "usage": {}})
    assert (message.role, message.text, message.id) == ("user", "hi", "msg_1")
    assert message.tool_calls == [] and message.images == [] and message.usage is None and message.meta == {}
