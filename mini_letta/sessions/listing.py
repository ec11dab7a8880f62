"""The sessions table is a view, not storage: what ``mini-letta sessions``, ``/sessions`` and
``/resume`` show of the session files, and how ``--continue`` / ``--resume`` find one.

Everything here reads files through ``session.load_session``; nothing writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_letta.notices import Say, quiet
from mini_letta.errors import SessionError
from mini_letta.sessions.store import LoadedSession, load_session, no_header, sessions_dir


@dataclass
class SessionSummary:
    id: str
    path: Path
    started: str
    workspace: str
    first_prompt: str
    message_count: int
    tokens: int
    provider: str = ""
    model: str = ""
    warnings: list[str] = field(default_factory=list)
    user_messages: int = 0
    # The saved replies at the session model's price; None when the model has none.
    cost_usd: float | None = None
    replies: int = 0  # the model's messages: a session without one holds no conversation yet
    mode: str = ""  # "print" for a -p run


def _replies_cost(loaded: LoadedSession, model: str, prices: Any) -> float | None:
    from mini_letta.cost import Spend

    spend = Spend(prices)
    for message in loaded.all_messages:
        if message.role == "assistant":
            spend.add(model, message.usage)
    return spend.usd


def _estimate_tokens(loaded: LoadedSession) -> int:
    for message in reversed(loaded.messages_in_context):
        if message.role == "assistant" and message.usage is not None and not message.usage.is_empty:
            if message.seq > loaded.boundary_seq:
                return message.usage.context_tokens
            break
    chars = sum(len(m.text) + sum(len(c.arguments) + len(c.name) for c in m.tool_calls)
                for m in loaded.messages_in_context)
    return -(-chars // 4)


def summarize(loaded: LoadedSession, prices: Any = None) -> SessionSummary:
    """The listing's row for ``loaded``; with a price table (``cost.PriceTable``), its cost too."""
    header = loaded.header
    first_prompt = next((m.text for m in loaded.all_messages if m.role == "user" and m.kind == "normal"), "")
    return SessionSummary(
        id=loaded.id or (loaded.path.stem if loaded.path else ""),
        path=loaded.path or Path(),
        started=str(header.get("started", "")),
        workspace=str(header.get("workspace", "")),
        first_prompt=first_prompt,
        message_count=len(loaded.all_messages),
        tokens=_estimate_tokens(loaded),
        provider=str(header.get("provider", "")),
        model=str(header.get("model", "")),
        warnings=list(loaded.warnings),
        user_messages=sum(1 for m in loaded.all_messages if m.role == "user" and m.kind == "normal"),
        replies=sum(1 for m in loaded.all_messages if m.role == "assistant"),
        mode=str(header.get("mode", "")),
        cost_usd=_replies_cost(loaded, str(header.get("model", "")), prices) if prices is not None else None,
    )


def _session_files(home: Path) -> list[Path]:
    folder = sessions_dir(home)
    try:
        return sorted(p for p in folder.iterdir() if p.suffix == ".jsonl" and p.is_file())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SessionError(f"Cannot read the sessions folder {folder}: {exc.strerror or exc}.") from exc


def _same_workspace(recorded: str, workspace: Path | str) -> bool:
    return recorded == str(Path(workspace).resolve())


def list_sessions(home: Path, workspace: Path | str | None = None, say: Say = quiet) -> list[SessionSummary]:
    """Sessions newest first, optionally only those of ``workspace``. Damaged files are said
    through ``say`` and left out."""
    from mini_letta.cost import load_prices

    prices = load_prices(home, say)
    summaries = []
    for path in _session_files(home):
        try:
            summary = summarize(load_session(path), prices)
        except SessionError as exc:
            say(f"Skipping a session: {exc}")
            continue
        if workspace is None or _same_workspace(summary.workspace, workspace):
            summaries.append(summary)
    summaries.sort(key=lambda s: (s.started, s.id), reverse=True)
    return summaries


def newest_session(home: Path, workspace: Path | str, say: Say = quiet) -> Path | None:
    """The most recent session of ``workspace`` that has a reply from the model (for
    ``--continue``), or None. A start-and-quit, or a message every request for which failed,
    leaves a session that is not what anyone means by "the last conversation".

    Asked before the REPL draws its prompt, so it reads what it must: the header line of each file
    (the workspace and start time, as ``list_sessions`` sorts them), then, newest first, only until
    one has a conversation; a file written by this version says so in its message lines."""
    candidates = []
    for path in _session_files(home):
        header = _header(path)
        if header is None:  # said, as the listing says it: a damaged file is never passed over in silence
            say(f"Skipping a session: {no_header(path)}")
        elif _same_workspace(str(header.get("workspace", "")), workspace):
            candidates.append((str(header.get("started", "")), str(header.get("id") or path.stem), path))
    for _, _, path in sorted(candidates, reverse=True):
        if _has_conversation(path):
            return path
    return None


# How the writer starts a message line of each role (``Message.to_dict`` puts ``role`` first).
_USER_LINE = b'{"type":"message","message":{"role":"user",'
_REPLY_LINE = b'{"type":"message","message":{"role":"assistant",'


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as file:
            header = json.loads(file.readline())
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) and header.get("type") == "header" else None


def _has_conversation(path: Path) -> bool:
    """A typed message and a reply: seen in the lines as written, else by loading the session."""
    try:
        raw = path.read_bytes()
        if _USER_LINE in raw and _REPLY_LINE in raw:
            return True
        summary = summarize(load_session(path))
    except (OSError, SessionError):
        return False
    return bool(summary.user_messages and summary.replies)


def find_session(home: Path, session_id: str) -> Path:
    """The session whose id is ``session_id`` or starts with it (for ``--resume``)."""
    wanted = session_id.strip()
    files = _session_files(home)
    exact = [p for p in files if p.stem == wanted]
    if exact:
        return exact[0]
    matches = [p for p in files if wanted and p.stem.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SessionError(f"Session id {wanted!r} is ambiguous: it matches {_id_list(matches)}; type more of it.")
    if not files:
        raise SessionError(f"No session {wanted!r}: there are no saved sessions yet.")
    raise SessionError(f"No session {wanted!r}. {_recent(home)}")


def _recent(home: Path, shown: int = 5) -> str:
    """The newest sessions, with their first prompts, for an error about a session id."""
    from mini_letta.trust.terminal_text import one_line

    summaries = list_sessions(home)  # quietly: damaged files are said by `mini-letta sessions`, not in this error
    entries = []
    for s in summaries[:shown]:
        prompt = one_line(s.first_prompt)
        prompt = prompt if len(prompt) <= 40 else prompt[:39] + "…"
        details = [part for part in (s.started.replace("T", " ")[:16], prompt and f"“{prompt}”") if part]
        entries.append(s.id + (f" ({', '.join(details)})" if details else ""))
    more = f" and {len(summaries) - shown} more" if len(summaries) > shown else ""
    return (f"Recent sessions: {'; '.join(entries)}{more}. `mini-letta sessions --all` lists them; "
            "resume one with `mini-letta -r <id>`.")


def _id_list(paths: list[Path], shown: int = 10) -> str:
    ids = sorted((p.stem for p in paths), reverse=True)
    text = ", ".join(ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def short_ids(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """Each id's shortest prefix (at least ``minimum`` characters) that no other id starts with:
    what ``--resume`` accepts, short enough to type."""
    shortest = {}
    for session_id in ids:
        others = [other for other in ids if other != session_id]
        length = min(minimum, len(session_id))
        while length < len(session_id) and any(other.startswith(session_id[:length]) for other in others):
            length += 1
        shortest[session_id] = session_id[:length]
    return shortest


# Columns dropped, in this order, while the table is wider than the terminal (the id always stays).
_OPTIONAL_COLUMNS = ("First prompt", "Cost", "Started", "Tokens", "Msgs")


def session_table(summaries: list[SessionSummary], show_workspace: bool = False, *, width: int | None = None,
                  home: Path | None = None, numbered: bool = False) -> Any:
    """A ``rich.table.Table`` of sessions for ``mini-letta sessions`` and ``/resume``.

    With ``home`` the ids are shown as their shortest unique prefixes among all sessions there. With
    ``width`` the columns that do not fit are left out, the first prompt first, so ids stay whole.
    """
    from rich.table import Table
    from rich.text import Text

    from mini_letta.cost import dollars
    from mini_letta.trust.terminal_text import preview, visible

    ids = {s.id: s.id for s in summaries}
    if home is not None:
        ids.update(short_ids([p.stem for p in _session_files(home)]))
    rows = []
    for index, s in enumerate(summaries, start=1):
        # Everything here was read from session files: never markup, controls made visible.
        row = {"#": str(index), "ID": Text(visible(ids.get(s.id, s.id))),
               "Started": Text(visible(s.started.replace("T", " ")[5:16])), "Msgs": f"{s.message_count:,}",
               "Tokens": f"{s.tokens:,}", "Cost": dollars(s.cost_usd) if s.cost_usd is not None else "–",
               "Workspace": Text(visible(s.workspace)),
               "First prompt": Text(("(-p) " if s.mode == "print" else "") + preview(visible(s.first_prompt), 60))}
        rows.append(row)
    columns = (["#"] if numbered else []) + ["ID", "Started", "Msgs", "Tokens", "Cost"]
    columns += (["Workspace"] if show_workspace else []) + ["First prompt"]
    # Columns other than the prompt (and a workspace, which folds) are never squeezed: Rich would
    # cut their headers and numbers to "M…".
    fixed = {name: max([len(name)] + [len(str(r[name])) for r in rows]) for name in columns
             if name not in ("First prompt", "Workspace")}
    if width is not None:
        for name in _OPTIONAL_COLUMNS:
            needed = sum(fixed[c] + 1 for c in columns if c in fixed) + (20 if "First prompt" in columns else 0)
            if needed <= width:
                break
            columns.remove(name)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name in columns:
        if name == "First prompt":
            table.add_column(name, overflow="ellipsis", no_wrap=True)
        elif name == "Workspace":
            table.add_column(name, overflow="fold")
        else:
            table.add_column(name, no_wrap=True, min_width=fixed[name],
                             justify="right" if name in ("#", "Msgs", "Tokens", "Cost") else "left")
    for row in rows:
        table.add_row(*(row[name] for name in columns))
    return table
