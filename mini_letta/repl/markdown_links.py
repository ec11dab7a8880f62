"""Rich's Markdown with links the user can check: ``[text](target)`` prints as ``text (target)``.

Rich renders a link as a terminal hyperlink (OSC 8) by default: the text is shown and the target is
not, so a model (or a file it quotes) can show ``https://github.com/acme/app/pull/12`` and send a
click to ``https://evil.example/login``. With ``hyperlinks=False`` Rich prints the text and then the
target in brackets, and emits no hyperlink escape; a link whose text already is its target
(``<https://example.com>``) is printed once, as plain text.
"""

from __future__ import annotations

from rich.markdown import Markdown


def _shows_its_target(text: str, href: str) -> bool:
    text = text.strip()
    return href in (text, f"mailto:{text}", f"https://{text}", f"http://{text}")


def _unlink_self_links(children: list) -> list:
    """``children`` of an inline token without the link_open/link_close pairs around text that is
    the link's own target (nothing to warn about, and printing it twice is noise)."""
    kept: list = []
    index = 0
    while index < len(children):
        token = children[index]
        if token.type == "link_open":
            close = next((i for i in range(index + 1, len(children)) if children[i].type == "link_close"), None)
            inner = children[index + 1:close] if close is not None else []
            text = "".join(t.content for t in inner if t.type in ("text", "code_inline"))
            if close is not None and all(t.type == "text" for t in inner) and _shows_its_target(
                    text, str(token.attrs.get("href", ""))):
                kept += inner
                index = close + 1
                continue
        kept.append(token)
        index += 1
    return kept


class LinkTargetMarkdown(Markdown):
    """``Markdown`` whose links print as text plus target, never as hidden hyperlinks."""

    def __init__(self, markup: str, **options) -> None:
        super().__init__(markup, hyperlinks=False, **options)
        for token in self.parsed:
            if token.children:
                token.children = _unlink_self_links(token.children)
