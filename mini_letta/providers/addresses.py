"""What a base URL says about its server: one of one's own (a loopback or private address), or the
official API. A module of its own so that the error mapping and the probe both read it, without
the one importing the other (the probe posts through ``http_stream``, which maps errors).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

OFFICIAL_HOSTS = ("api.openai.com", "api.anthropic.com")


def is_official(base_url: str) -> bool:
    host = (urlsplit(base_url).hostname or "").lower()
    return host in OFFICIAL_HOSTS


def is_local_address(base_url: str) -> bool:
    """A loopback or private address (a server of one's own, which needs no key). Names are not
    looked up: only ``localhost`` and literal addresses count."""
    host = (urlsplit(base_url if "://" in base_url else "http://" + base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private
