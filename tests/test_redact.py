"""Secrets are masked in what goes to disk, and ordinary text is left readable."""

import pytest

from mini_letta.trust.redact import MASK, redact, redact_text

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


# --- values, never names (issue 22) ---------------------------------------------------------------
CODE_FROM_THE_REVIEW = [
    "api_key = settings.OPENAI_API_KEY",
    "client = OpenAI(api_key=api_key)",
    "self.password_hash = cfg.password_hash",
    "return driver.connect(user=self.user, password=self.password_hash)",
    "monkeypatch.setenv('API_KEY', 'test-key-1234')",
    'token = os.environ["GITHUB_TOKEN"]',
    'password = os.getenv("DB_PASSWORD", "")',
    "  password: ${DB_PASSWORD}",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    'headers = {"Authorization": f"Bearer {token}"}',
    "def login(self, username: str, password: str) -> bool:",
    'if pem.startswith("-----BEGIN PRIVATE KEY-----"):',
    "mysql -u root -p shop",
    "echo \"$PASS\" | docker login -u ci --password-stdin",
]


@pytest.mark.parametrize("line", CODE_FROM_THE_REVIEW)
def test_code_that_looks_a_secret_up_is_left_as_written(line):
    assert redact_text(line, literals=[]) == line


def test_only_the_value_is_masked_and_the_name_keeps_its_other_uses():
    text = 'SECRET_KEY = "Wq8zLp3mXv7Rt2Nk"\nSIGNING_KEY = SECRET_KEY\npassword=self.password_hash)\n'
    assert redact_text(text, literals=[]) == (f'SECRET_KEY = "{MASK}"\nSIGNING_KEY = SECRET_KEY\n'
                                              "password=self.password_hash)\n")


def test_a_jwt_is_masked_with_its_signature():
    jwt = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2"
           "MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
    assert redact_text(f"JWT={jwt}", literals=[]) == f"JWT={MASK}"


def test_a_key_block_is_masked_but_code_naming_both_markers_is_not():
    code = '_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n_END = b"-----END OPENSSH PRIVATE KEY-----"\n'
    assert redact_text(code, literals=[]) == code


@pytest.mark.parametrize(("text", "masked"), [
    ("REDIS_URL=redis://:Xq7vL2mPzR9kWc4t@cache:6379/0", "REDIS_URL=redis://:[REDACTED]@cache:6379/0"),
    ("GET /c/b?sv=2022-11-02&sp=r&sig=Yh3kP9mQ2vL8xR5tB7nW4cJ6dF1gZ0sA%2BeU3i%3D HTTP/1.1",
     "GET /c/b?sv=2022-11-02&sp=r&sig=[REDACTED] HTTP/1.1"),
    ("AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX", "[REDACTED]"),
    ("DB_PASSWORD=hunter2hunter2", "DB_PASSWORD=[REDACTED]"),
])
def test_the_formats_the_third_review_found_in_clear_are_masked(text, masked):
    assert redact_text(text) == masked


@pytest.mark.parametrize("text", [
    "REDIS_URL=redis://:${REDIS_PASSWORD}@cache:6379/0", "redis://:password@localhost", "sig = inspect.signature(f)",
    'url + "&sig=" + signature', 'password = "hunter2"', "API_KEY=test-test-key",
])
def test_their_look_alikes_are_left_alone(text):
    assert redact_text(text) == text
