"""Text that crosses a trust boundary: secrets masked before anything is written, regexes a model chose, model text made safe to print."""
