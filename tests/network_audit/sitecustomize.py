"""A socket audit for the processes a test starts: every way off the machine is logged and refused.

A test puts this folder on the child's ``PYTHONPATH`` and names a log file in
``LLM_MESA_NETWORK_AUDIT``; Python imports ``sitecustomize`` at start-up, in every
interpreter the child starts too (``llm-mesa viz`` replaces itself with ``solara
run``, which inherits the environment). The hook (``sys.addaudithook``, PEP 578)
sees each name lookup (``socket.getaddrinfo``, ``gethostbyname``, ...), each
``connect``/``sendto`` and each ``bind``. A target outside loopback (127.0.0.0/8, ::1,
``localhost``; a Unix socket is local) is written to the log as one JSON line and
refused with ``OSError``, so the audit never lets a packet out while it watches.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
import traceback

LOG = os.environ.get("LLM_MESA_NETWORK_AUDIT")
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
LOOKUPS = {"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr",
           "socket.getnameinfo"}
ADDRESSED = {"socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind"}


def is_local(host: object) -> bool:
    """Loopback, or no host at all (a lookup for a listening socket's wildcard is caught at ``bind``)."""
    if host is None or host == "" or host == b"":
        return True
    text = host.decode(errors="replace") if isinstance(host, bytes) else str(host)
    text = text.split("%")[0].strip("[]").lower()
    if text in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _target(event: str, args: tuple) -> object | None:
    """The host an event reaches for, or None when it stays on the machine."""
    if event in LOOKUPS:
        first = args[0]
        host = first[0] if isinstance(first, tuple) else first
        return None if is_local(host) else host
    sock, address = args[0], args[1]
    if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return None  # a Unix socket, a netlink socket: local by nature
    host = address[0]
    if event == "socket.bind":  # a server that listens beyond loopback (0.0.0.0, "") is reachable from off it
        return None if host not in ("", "0.0.0.0", "::") and is_local(host) else (host or "0.0.0.0")
    return None if is_local(host) else host


def _hook(event: str, args: tuple) -> None:
    if event not in LOOKUPS and event not in ADDRESSED:
        return
    target = _target(event, args)
    if target is None:
        return
    record = {"event": event, "target": str(target), "pid": os.getpid(), "argv": sys.orig_argv[:6],
              "where": "".join(traceback.format_stack(limit=8)[:-2])[-1500:]}
    with open(LOG, "a") as out:
        out.write(json.dumps(record) + "\n")
    raise OSError(f"refused by the test's network audit: {event} {target}")


if LOG:
    with open(LOG, "a") as out:  # this process runs under the audit (a test checks the processes it means did)
        out.write(json.dumps({"event": "audit-on", "pid": os.getpid(), "argv": sys.orig_argv[:6],
                              "target": "", "where": ""}) + "\n")
    sys.addaudithook(_hook)
