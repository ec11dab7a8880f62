"""Secrets are masked in what goes to disk, and ordinary text is left readable."""

from mini_letta.redact import MASK, redact, redact_text

OPENAI_KEY = "sk-proj-Ab3dEf6hIj9kLmNoPqRsTuVwXyZ012345"
ANTHROPIC_KEY = "sk-ant-api03-ZyXwVu9876tSrQpOnMlKjIhGfEdCbA-xyz_12"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcdef==\n-----END RSA PRIVATE KEY-----"


def test_known_key_shapes_are_masked():
    samples = {
        "openai": OPENAI_KEY,
        "anthropic": ANTHROPIC_KEY,
        "aws": "AKIAIOSFODNN7EXAMPLE",
        "github": "ghp_0123456789abcdefghijABCDEFGHIJ",
        "slack": "xoxb-1234567890-abcdefghij",
    }
    for name, secret in samples.items():
        masked = redact_text(f"the {name} key is {secret} ok")
        assert secret not in masked, name
        assert masked == f"the {name} key is {MASK} ok", name


def test_bearer_header_keeps_its_name_and_loses_its_value():
    masked = redact_text("curl -H 'Authorization: Bearer abc.def-ghi_123' https://x")
    assert masked == f"curl -H 'Authorization: Bearer {MASK}' https://x"


def test_pem_private_key_block_is_masked_whole():
    masked = redact_text(f"key:\n{PEM}\nend")
    assert masked == f"key:\n{MASK}\nend"


def test_pem_inside_json_escaped_tool_arguments_is_masked():
    arguments = '{"content": "' + PEM.replace("\n", "\\n") + '"}'
    assert redact_text(arguments) == '{"content": "' + MASK + '"}'


def test_env_key_values_are_masked_even_without_a_known_shape(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "plain-looking-secret-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "another_secret_9")
    assert redact_text("a plain-looking-secret-value and another_secret_9") == f"a {MASK} and {MASK}"


def test_short_placeholder_keys_are_not_masked_everywhere(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "ollama")
    assert redact_text("run ollama serve") == "run ollama serve"


def test_ordinary_hyphenated_words_survive():
    text = "task-management-system-design and sk-learn-is-not-a-key-at-all"
    assert redact_text(text) == text


def test_redact_walks_nested_values_and_leaves_the_original_alone():
    original = {"message": {"text": OPENAI_KEY, "tool_calls": [{"arguments": ANTHROPIC_KEY}], "seq": 3}}
    masked = redact(original)
    assert masked == {"message": {"text": MASK, "tool_calls": [{"arguments": MASK}], "seq": 3}}
    assert original["message"]["text"] == OPENAI_KEY


def test_kept_keys_are_copied_unmasked():
    value = {"images": [{"data": "AKIAIOSFODNN7EXAMPLE"}], "text": "AKIAIOSFODNN7EXAMPLE"}
    assert redact(value, keep=frozenset({"images"})) == {"images": [{"data": "AKIAIOSFODNN7EXAMPLE"}], "text": MASK}
