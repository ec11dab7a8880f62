from mini_letta.repl.history import RedactingFileHistory


def test_history_file_never_holds_a_pasted_key(tmp_path):
    path = tmp_path / "history"
    history = RedactingFileHistory(str(path))
    key = "sk-ant-api03-" + "A1b2C3d4" * 8
    history.append_string(f"use this key {key} please")
    assert key not in path.read_text()
    assert "[REDACTED]" in path.read_text()
    assert "use this key" in path.read_text()
