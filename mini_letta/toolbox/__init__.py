"""The tools the model calls: files, search and shell, confined to the workspace."""

from mini_letta.toolbox.approval import Approver, approve_all, deny_with
from mini_letta.toolbox.outcome import ToolError, ToolInterrupted, ToolOutcome
from mini_letta.toolbox.registry import Toolbox

__all__ = ["Approver", "ToolError", "ToolInterrupted", "ToolOutcome", "Toolbox",
           "approve_all", "deny_with"]
