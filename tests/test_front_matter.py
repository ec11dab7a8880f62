"""YAML front matter read by PyYAML, every problem with the file's line."""

from __future__ import annotations

import pytest

from mini_letta.front_matter import FrontMatterError, read_front_matter


def test_fields_body_and_the_lines_of_keys():
    front = read_front_matter("\ufeff---\r\nname: a\r\ndescription: >\r\n  two\r\n  lines\r\n---\r\nBody\r\n")
    assert front.fields == {"name": "a", "description": "two lines\n"}
    assert (front.body, front.body_line, front.key_lines) == ("Body\r\n", 7, {"name": 2, "description": 3})


@pytest.mark.parametrize("text, line, start", [
    ("# no front matter\n", 1, "it does not start with front matter"),
    ("---\nname: a\n", 1, "the front matter opened here is never closed"),
    ("---\nname: a\ndescription: b: c\n---\n", 3, "the front matter is not valid YAML: mapping values"),
    ("---\n[a, b]\n---\n", 2, "the front matter must be key: value lines"),
])
def test_each_problem_names_its_line(text, line, start):
    with pytest.raises(FrontMatterError) as caught:
        read_front_matter(text)
    assert caught.value.line == line and caught.value.text.startswith(start)
