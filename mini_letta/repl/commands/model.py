"""/model and /provider: show the model, or switch; the window and the status bar follow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_letta.errors import AuthenticationError
from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain, short_tokens

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost

MAX_LISTED = 30


@command("model", "/model [name]")
def model_command(repl: "ReplHost", argument: str) -> None:
    """Show the model and pick another of the server's, or switch by name; the window and status bar follow."""
    switch_model(repl, None, argument or None, pick=True)


@command("provider", "/provider [name [model]]")
def provider_command(repl: "ReplHost", argument: str) -> None:
    """Show the provider, or switch to openai, openai-responses, anthropic, ollama or demo (with its default or a given model)."""
    words = argument.split()
    if len(words) > 2:
        repl.console.print("Usage: /provider [name [model]]")
        return
    switch_model(repl, words[0] if words else None, words[1] if len(words) > 1 else None)


def switch_model(repl: "ReplHost", provider_name: str | None, model: str | None, *, pick: bool = False) -> None:
    """Show the model, or switch; with ``pick`` (a bare /model), offer the server's models."""
    from mini_letta.app import switch_provider
    from mini_letta.context import should_compact
    from mini_letta.providers import create_provider
    from mini_letta.repl.commands.compact import compact, drop_prepared_summary

    agent = repl.agent()
    current = agent.provider
    if provider_name is None and model is None:
        repl.console.print(Text.assemble("Using ", plain(f"{current.name}:{current.model}", "bold"),
                                         f" · window {agent.budget.window:,} tokens, compaction at "
                                         f"{agent.budget.threshold:,}. /model NAME or /provider NAME changes it."))
        model = _pick_model(repl, current) if pick else None
        if model is None:
            return
    name = (provider_name or current.name).lower()
    if name == "demo" and provider_name is None:
        repl.console.print("/model does not apply to the offline demo model: it has no other models. "
                           "Use /provider openai, anthropic or ollama (with its key) for a real one.")
        return
    base_url = getattr(current, "base_url", None) if name == current.name else None
    try:
        provider = create_provider(name, model, base_url, say=repl.agent().say)
    except AuthenticationError as error:
        if not getattr(error, "key_env", None):
            raise
        repl.console.print(plain(f"No API key for {name}: set {error.key_env} in your shell and start mini-letta "
                                 f"again to use it. Still using {current.name}:{current.model}.", "yellow"))
        return
    before = agent.budget.window
    switch_provider(agent, provider, repl.options.compact_at)
    drop_prepared_summary(agent)
    repl.refresh_status()
    state = agent.context_state()
    change = "" if state.window == before else f" (was {short_tokens(before)})"
    repl.console.print(Text.assemble("Now using ", plain(f"{provider.name}:{provider.model}", "bold"),
                                     f" · window {short_tokens(state.window)}{change}, compaction at "
                                     f"{short_tokens(agent.budget.threshold)} · {state.percent_left}% context left"))
    if agent.budget.auto_compact and should_compact(state.tokens, agent.budget.threshold_window):
        repl.console.print(plain(f"The conversation ({short_tokens(state.tokens)} tokens) is over the new "
                                 "window's compaction threshold: compacting now.", "yellow"))
        compact(repl, None)


def _pick_model(repl: "ReplHost", provider) -> str | None:
    """The models the provider's server lists, numbered; the one typed (a number or a name), or
    None (Enter, Ctrl-C, nothing listed: the model stays)."""
    from prompt_toolkit import PromptSession

    from mini_letta.providers.probe import ServerUnreachable
    from mini_letta.trust.terminal_text import visible

    listed = getattr(provider, "listed_models", None)
    if listed is None:
        return None  # the demo model: there is no other
    try:
        models = listed()
    except (ServerUnreachable, OSError) as error:
        repl.console.print(plain(f"The server did not list its models ({error}); /model NAME switches by name.",
                                 "yellow"))
        return None
    if not models:
        return None
    shown = models[:MAX_LISTED]
    for number, name in enumerate(shown, start=1):
        repl.console.print(plain(f"{number:>3}  {visible(name)}" + ("  (in use)" if name == provider.model else "")))
    if len(models) > len(shown):
        repl.console.print(plain(f"(the first {len(shown)} of {len(models)}; any name can be typed)", "dim"))
    try:
        typed = PromptSession().prompt(f"Switch to which? A number or a name (Enter keeps {provider.model}): ")
    except (KeyboardInterrupt, EOFError):
        typed = ""
    typed = typed.strip()
    if typed.isdigit() and 1 <= int(typed) <= len(shown):
        typed = shown[int(typed) - 1]
    return typed if typed and typed != provider.model else None
