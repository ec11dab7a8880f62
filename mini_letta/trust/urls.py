"""A URL as it may be shown: its userinfo (``user:password@``) masked.

A base URL can carry credentials (``http://user:secret@proxy:8080/v1``); every message, log line
and JSON field that names an address shows it through :func:`shown_url`, and text that may quote
one (an error from a server or a library) through :func:`mask_userinfo`. The whole userinfo is
masked, user name included: what a credential is made of is not ours to judge here.
"""

from __future__ import annotations

import re

MASK = "***"
# scheme://userinfo@ — userinfo runs to the last "@" before the host's end ("/", "?", "#", space or quote).
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s@'\"<>]*@)+")


def mask_userinfo(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text) if "@" in text else text


def shown_url(url: object) -> str:
    """A URL (or None, shown as "") for a message: its userinfo masked."""
    return mask_userinfo(str(url)) if url is not None else ""
