"""``mini-letta acp``: mini-letta as an Agent Client Protocol agent on standard input and output, for
editors that drive agents over it (Zed, JetBrains, Neovim's CodeCompanion and avante).

The face of the same engine as the REPL and ``-p``: each editor session is an agent built by
``app.build_agent``, talked to through what the REPL uses (``AgentEvents``, the approver, ``run_turn``,
the headless commands, the checkpoints' rewind). The SDK (``agent-client-protocol``, with pydantic)
is imported only here, so neither the REPL nor ``-p`` pays for it.

- ``transport.py``: JSON-RPC lines on stdio; malformed input gets its JSON-RPC error.
- ``worker.py``: the engine's thread (the main one) and a cancel as Ctrl-C.
- ``server.py``: the protocol's methods; ``session.py``: one editor session.
- ``events.py``, ``tool_calls.py``, ``replay.py``: what the editor is shown.
- ``approvals.py``, ``modes.py``: session/request_permission and the session modes.
- ``client_editor.py``: the editor's files and terminals, behind ``toolbox/editor.py``.
- ``commands.py``: /compact, /context, /rewind and the skills.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from mini_letta.app import Options


def run(options: Options) -> int:
    """Serve the protocol until the client closes standard input; the process's exit code."""
    from acp import run_agent

    from mini_letta.acp.server import MiniLettaAgent
    from mini_letta.acp.transport import LineTransport, claim_stdout
    from mini_letta.acp.worker import Worker

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    output = claim_stdout()
    worker = Worker()
    agents: list[MiniLettaAgent] = []

    async def serve() -> None:
        agent = MiniLettaAgent(options, worker, asyncio.get_running_loop())
        agents.append(agent)
        transport = await LineTransport.over_stdio(output)
        try:
            await run_agent(agent, transport)
        finally:
            # The client is gone: stop what runs, and let every job end while this loop can still
            # take its result (the drain is the last job in the queue).
            agent.close()
            await asyncio.wrap_future(worker.submit("", lambda: None))

    def protocol() -> None:
        try:
            asyncio.run(serve())
        finally:
            worker.stop()

    thread = threading.Thread(target=protocol, name="acp-protocol", daemon=True)
    thread.start()
    worker.serve()
    for agent in agents:
        for session in agent.sessions.values():
            session.close()
    return 0
