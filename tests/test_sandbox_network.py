"""Named hosts: with ``"network": ["host", "*.domain"]`` a sandboxed command reaches those hosts
through the filtering proxy and nothing else; a refused host is named to the model. Only servers the
test starts on 127.0.0.1 are used ("localhost" is the allowed name, "127.0.0.1" the refused one)."""

from __future__ import annotations

import json

import pytest

from mini_letta.notices import Notices
from mini_letta.messages import ToolCall
from mini_letta.toolbox import Toolbox, approve_all
from mini_letta.toolbox.netproxy import host_allowed
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings, load_settings
from test_sandbox_escapes import _Counting, local_server  # noqa: F401 - a fixture

SANDBOX_NEEDED = pytest.mark.usefixtures("bubblewrap")


# Prints the body of an error answer too (the proxy's refusal says why in it).
FETCH = """import sys, urllib.error, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1]).read().decode())
except urllib.error.HTTPError as error:
    print(error.code, error.read().decode())
    sys.exit(1)
"""


def reached(path: str) -> bool:
    return any(hit.endswith(path) for hit in _Counting.hits)


def run(box: Toolbox, command: str):
    return box.run(ToolCall("c1", "bash", json.dumps({"command": command})))


def named_hosts_box(workspace, hosts=("localhost",), mode="workspace-write") -> Toolbox:
    sandbox = Sandbox.create(workspace, SandboxSettings(mode, hosts=hosts), workspace.parent / "data")
    return Toolbox(workspace, approve_all, sandbox=sandbox)


@SANDBOX_NEEDED
def test_an_allowed_host_is_reached_through_the_proxy_and_another_is_refused_by_name(workspace, local_server):
    box = named_hosts_box(workspace)
    (workspace / "fetch.py").write_text(FETCH)
    fetch = "python3 fetch.py http://{host}:%d/{path}" % local_server
    allowed = run(box, fetch.format(host="localhost", path="allowed"))
    assert allowed.text.startswith("reached the host\n") and reached("/allowed"), allowed.text
    refused = run(box, fetch.format(host="127.0.0.1", path="refused"))
    assert not reached("/refused")
    assert "127.0.0.1 is not an allowed host" in refused.text and "allowed list" in refused.text.split("[sandbox")[1]

    outside = run(named_hosts_box(workspace, mode="off"), fetch.format(host="127.0.0.1", path="refused"))
    assert reached("/refused"), outside.text  # the same request, unsandboxed, gets through


@SANDBOX_NEEDED
def test_going_around_the_proxy_finds_no_network(workspace, local_server):
    command = ("python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), timeout=5); "
               "print('connected')\"" % local_server)
    outcome = run(named_hosts_box(workspace), command)
    assert "connected" not in outcome.text and "Connection refused" in outcome.text
    assert "the sandbox has no network" in outcome.text


@pytest.mark.parametrize("host, allowed", [
    ("pypi.org", True), ("PyPI.org.", True), ("files.pythonhosted.org", True), ("pythonhosted.org", False),
    ("evil-pypi.org", False), ("pypi.org.evil.com", False),
])
def test_host_names_match_exactly_or_by_wildcard_subdomain(host, allowed):
    assert host_allowed(host, ("pypi.org", "*.pythonhosted.org")) is allowed


def test_a_list_of_hosts_in_settings_means_those_hosts_only(tmp_path, monkeypatch):
    monkeypatch.delenv("MINI_LETTA_SANDBOX")
    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"network": ["pypi.org", "*.pythonhosted.org"]}}))
    settings = load_settings(tmp_path)
    assert settings.network is False and settings.hosts == ("pypi.org", "*.pythonhosted.org")
    (tmp_path / "settings.json").write_text(json.dumps({"sandbox": {"network": ["pypi.org", 5]}}))
    channel = Notices()
    assert load_settings(tmp_path, say=channel.say).hosts == ()
    assert "a list of host names" in channel.take()[0]
