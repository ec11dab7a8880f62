"""Core memory: edits persist, limits are enforced with figures, bad files never crash."""

import json

import pytest

from mini_letta.notices import Notices
from mini_letta import config
from mini_letta.memory import CoreMemory, memory_path, memory_tools, workspace_key
from mini_letta.messages import ToolSpec


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "my project"
    folder.mkdir()
    return folder


def test_memory_file_lives_under_home_with_readable_hashed_key(workspace, tmp_path):
    path = memory_path(workspace)
    assert path.parent == config.home() / "memory"
    assert path.name.startswith("my-project-") and path.suffix == ".json"
    other = tmp_path / "elsewhere" / "my project"
    other.mkdir(parents=True)
    assert workspace_key(other) != workspace_key(workspace)


def test_defaults_have_persona_human_project_with_limits(workspace):
    memory = CoreMemory.for_workspace(workspace)
    assert memory.labels() == ["persona", "human", "project"]
    assert [memory.get(label).limit for label in memory.labels()] == [2000, 2000, 4000]


def test_append_persists_and_appears_in_render(workspace):
    memory = CoreMemory.for_workspace(workspace)
    result = memory.append("human", "Prefers pytest over unittest.")
    assert result == "core memory block 'human' updated: now 29/2,000 chars"
    reloaded = CoreMemory.for_workspace(workspace)
    assert reloaded.get("human").value == "Prefers pytest over unittest."
    rendered = reloaded.render()
    assert '<human chars="29/2000"' in rendered
    assert "Prefers pytest over unittest.\n</human>" in rendered
    assert rendered.startswith("<core_memory>") and rendered.endswith("</core_memory>")


def test_second_append_goes_on_a_new_line(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.append("project", "Tests: pytest -q")
    memory.append("project", "Lint: ruff")
    assert memory.get("project").value == "Tests: pytest -q\nLint: ruff"


def test_render_order_is_stable_and_shows_every_block(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.append("project", "uses uv")
    rendered = memory.render()
    positions = [rendered.index(f"<{label} ") for label in ("persona", "human", "project")]
    assert positions == sorted(positions)
    assert rendered == CoreMemory.for_workspace(workspace).render()


def test_over_limit_append_is_refused_with_exact_figures(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.set_value("human", "x" * 1900)
    with pytest.raises(ValueError) as info:
        memory.append("human", "y" * 249)  # 1,900 + newline + 249 = 2,150
    assert str(info.value) == (
        "core memory block 'human' would be 2,150 chars, 150 over its 2,000 limit; "
        "shorten or replace older content"
    )
    assert memory.get("human").value == "x" * 1900
    assert CoreMemory.for_workspace(workspace).get("human").value == "x" * 1900


def test_replace_changes_every_occurrence_and_says_how_many(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.set_value("project", "make test; make lint")
    result = memory.replace("project", "make", "just")
    assert memory.get("project").value == "just test; just lint"
    assert result == "core memory block 'project' updated (2 occurrences replaced): now 20/4,000 chars"


def test_replace_edits_and_persists(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.append("human", "Name: Ada. Editor: vim.")
    memory.replace("human", "vim", "helix")
    assert CoreMemory.for_workspace(workspace).get("human").value == "Name: Ada. Editor: helix."


def test_replace_requires_old_content_to_occur(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.append("human", "Name: Ada.")
    with pytest.raises(ValueError, match="does not occur in core memory block 'human'"):
        memory.replace("human", "Name: Bob", "Name: Eve")
    with pytest.raises(ValueError, match="old_content is empty"):
        memory.replace("human", "", "x")


def test_unknown_label_names_the_existing_blocks(workspace):
    memory = CoreMemory.for_workspace(workspace)
    with pytest.raises(ValueError) as info:
        memory.append("notes", "x")
    assert str(info.value) == "no core memory block 'notes'; blocks are: persona, human, project"


def test_replace_over_limit_is_refused(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.set_value("human", "a" * 1980 + "Editor: vim")  # 1,991 chars
    with pytest.raises(ValueError, match="would be 2,009 chars, 9 over its 2,000 limit"):
        memory.replace("human", "vim", "b" * 21)


def test_set_value_has_the_same_limit_check(workspace):
    memory = CoreMemory.for_workspace(workspace)
    with pytest.raises(ValueError, match="'project' would be 4,001 chars, 1 over its 4,000 limit"):
        memory.set_value("project", "p" * 4001)


def test_block_over_its_limit_from_a_hand_edit_may_still_shrink(workspace):
    path = memory_path(workspace)
    path.parent.mkdir(parents=True)
    blocks = [{"label": "human", "description": "d", "value": "z" * 2400 + "y" * 100, "limit": 2000}]
    path.write_text(json.dumps({"format": 1, "blocks": blocks}))
    memory = CoreMemory.load(path)
    memory.replace("human", "y" * 100, "")
    assert len(memory.get("human").value) == 2400
    with pytest.raises(ValueError, match="over its 2,000 limit"):
        memory.append("human", "more")


def test_user_defined_blocks_load_and_defaults_are_filled_in(workspace):
    path = memory_path(workspace)
    path.parent.mkdir(parents=True)
    blocks = [{"label": "style", "description": "Code style", "value": "tabs", "limit": 300}]
    path.write_text(json.dumps({"format": 1, "blocks": blocks}))
    memory = CoreMemory.load(path)
    assert memory.labels() == ["style", "persona", "human", "project"]
    assert '<style chars="4/300" description="Code style">\ntabs\n</style>' in memory.render()


def test_corrupt_memory_file_gives_defaults_and_is_kept_aside(workspace):
    path = memory_path(workspace)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    channel = Notices()
    memory = CoreMemory.load(path, channel.say)
    assert memory.labels() == ["persona", "human", "project"]
    aside = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".corrupt-")]
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    assert not path.exists()
    notices = channel.take()
    assert len(notices) == 1 and "damaged" in notices[0] and aside[0].name in notices[0]
    memory.append("human", "still works")
    assert CoreMemory.load(path).get("human").value == "still works"


def test_wrong_structure_counts_as_corrupt(workspace):
    path = memory_path(workspace)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"blocks": [{"label": "human", "value": 5, "limit": 10}]}))
    memory = CoreMemory.load(path)
    assert memory.get("human").value == ""
    assert any("value and description must be text" in w for w in memory.warnings)


def test_save_is_atomic_and_leaves_no_temp_files(workspace):
    memory = CoreMemory.for_workspace(workspace)
    memory.append("human", "a")
    memory.append("human", "b")
    assert [p.name for p in memory.path.parent.iterdir()] == [memory.path.name]
    assert json.loads(memory.path.read_text())["format"] == 1


def test_unsaveable_edit_still_applies_for_the_session_and_says_so(workspace):
    channel = Notices()
    memory = CoreMemory.for_workspace(workspace, say=channel.say)
    # A file where the memory folder should be fails for root too, unlike permission bits.
    memory.path.parent.parent.mkdir(parents=True)
    memory.path.parent.write_text("in the way")
    result = memory.append("human", "second")
    assert "for this session only: saving failed" in result
    assert memory.get("human").value == "second"
    assert any("not saved" in n for n in channel.take())


def test_memory_tools_specs_and_handlers(workspace):
    memory = CoreMemory.for_workspace(workspace)
    edits = []
    tools = dict((spec.name, (spec, handler)) for spec, handler in
                 memory_tools(memory, on_edit=lambda *edit: edits.append(edit)))
    assert set(tools) == {"core_memory_append", "core_memory_replace"}
    append_spec, append = tools["core_memory_append"]
    assert isinstance(append_spec, ToolSpec)
    assert append_spec.parameters["properties"]["label"]["enum"] == ["persona", "human", "project"]
    assert append_spec.parameters["required"] == ["label", "content"]
    result = append({"label": "human", "content": "Likes tea."})
    assert result == "core memory block 'human' updated: now 10/2,000 chars"
    _, replace = tools["core_memory_replace"]
    replace({"label": "human", "old_content": "tea", "new_content": "coffee"})
    assert CoreMemory.for_workspace(workspace).get("human").value == "Likes coffee."
    assert edits == [("human", "append", 10), ("human", "replace", 13)]


def test_memory_tool_failures_raise_value_error_and_skip_the_hook(workspace):
    memory = CoreMemory.for_workspace(workspace)
    edits = []
    (_, append), (_, replace) = memory_tools(memory, on_edit=lambda *edit: edits.append(edit))
    with pytest.raises(ValueError, match="argument 'content' must be a string"):
        append({"label": "human"})
    with pytest.raises(ValueError, match="blocks are: persona, human, project"):
        replace({"label": "nope", "old_content": "a", "new_content": "b"})
    assert edits == []


def test_unreadable_memory_file_gives_defaults_and_is_never_overwritten(workspace):
    path = memory_path(workspace)
    path.mkdir(parents=True)  # a folder where the file should be: reading fails, even for root
    channel = Notices()
    memory = CoreMemory.load(path, channel.say)
    assert memory.labels() == ["persona", "human", "project"]
    assert "edits will not be saved" in channel.take()[0]
    assert "for this session only" in memory.append("human", "x")
    assert path.is_dir()


# --- several processes on one memory file ----------------------------------------------------------
# Each process loads the memory at start-up, as `mini-letta` does, says so, and remembers its fact only
# when the test tells both to go: both copies were loaded before either was saved.
_REMEMBER_WHEN_TOLD = """
import sys
from pathlib import Path
from mini_letta.memory import CoreMemory, memory_tools

memory = CoreMemory.for_workspace(Path(sys.argv[1]))
tools = {spec.name: handler for spec, handler in memory_tools(memory)}
print("loaded", flush=True)
sys.stdin.readline()
print(tools["core_memory_append"]({"label": "project", "content": sys.argv[2]}), flush=True)
"""


def test_two_processes_remembering_at_the_same_moment_both_keep_their_fact(workspace):
    import subprocess
    import sys

    facts = ["The tests run with `make check`.", "Releases are tagged vX.Y.Z."]
    processes = [subprocess.Popen([sys.executable, "-c", _REMEMBER_WHEN_TOLD, str(workspace), fact],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for fact in facts]
    for process in processes:
        assert process.stdout.readline().strip() == "loaded"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        assert "updated" in out
    stored = CoreMemory.for_workspace(workspace).get("project").value
    assert all(fact in stored for fact in facts), stored


def test_an_edit_goes_on_from_what_another_process_saved_meanwhile(workspace):
    mine, theirs = CoreMemory.for_workspace(workspace), CoreMemory.for_workspace(workspace)
    theirs.append("human", "Prefers tabs.")
    mine.append("human", "Name: Ada.")
    assert CoreMemory.for_workspace(workspace).get("human").value == "Prefers tabs.\nName: Ada."
    # This process's system prompt shows the other's fact from now on too.
    assert "Prefers tabs." in mine.render()


def test_replacing_text_another_process_changed_is_refused_and_shows_the_current_text(workspace):
    mine, theirs = CoreMemory.for_workspace(workspace), CoreMemory.for_workspace(workspace)
    mine.append("human", "Drinks tea.")
    theirs.replace("human", "Drinks tea.", "Drinks coffee now.")
    with pytest.raises(ValueError) as refused:
        mine.replace("human", "tea", "water")
    assert "does not occur in core memory block 'human'" in str(refused.value)
    assert "its current text is:\nDrinks coffee now." in str(refused.value)
    assert CoreMemory.for_workspace(workspace).get("human").value == "Drinks coffee now."


def test_a_secret_masked_on_disk_stays_whole_for_the_session_that_was_told_it(workspace, monkeypatch):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    memory = CoreMemory.for_workspace(workspace)
    memory.append("project", f"CI token: {secret}")
    assert secret not in memory.path.read_text()
    memory.append("project", "Deploys on Fridays.")
    assert memory.get("project").value == f"CI token: {secret}\nDeploys on Fridays."
