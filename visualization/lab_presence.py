"""Is a seat's person on their page? What the host page shows as "connected" or "disconnected since T".

A browser tab is a Solara page of a kernel of its own; the kernel knows whether its page's
websocket is connected (``page_status``), and closes when the tab is closed or the page
is culled. Each seat page registers its kernel here (``Presence.page``); one thread per
lab looks at them every ``POLL_S`` seconds and tells each seat whether a page of the
browser that holds it is connected (``Seat.seen``: the change is timed, and every page
redraws). A browser that crashed is a page disconnected; the host then issues the seat a
new link (``LabSession.reissue``), and pages of the old browser no longer count.
"""

from __future__ import annotations

import threading
from typing import Any

from llm_mesa.lab.seat import Seat
from llm_mesa.lab.session import LabSession

#: seconds between two looks at the pages' connections
POLL_S = 0.5
_lock = threading.Lock()
_presences: dict[int, Presence] = {}  # by the lab's id: a server holds one lab


def presence_of(lab: LabSession) -> Presence:
    """The one ``Presence`` of ``lab`` (made, and its thread started, by the first page that asks)."""
    with _lock:
        found = _presences.get(id(lab))
        if found is None or found.lab is not lab:
            found = _presences[id(lab)] = Presence(lab)
        return found


def connected(context: Any) -> bool:
    """Has this kernel a page whose websocket is connected now?"""
    from solara.server.kernel_context import PageStatus

    if context.closed_event.is_set():
        return False
    with context.lock:
        return PageStatus.CONNECTED in list(context.page_status.values())


class Presence:
    """The kernels of each seat's pages, and the thread that tells each seat whether its holder is connected."""

    def __init__(self, lab: LabSession) -> None:
        self.lab = lab
        self._pages: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._watch, name="llm-mesa-lab-presence", daemon=True)
        self._thread.start()

    def page(self, seat: Seat, context: Any) -> None:
        """A page of ``seat`` runs in kernel ``context`` (its tab)."""
        with self._lock:
            pages = self._pages.setdefault(seat.number, [])
            if all(page is not context for page in pages):
                pages.append(context)
        self.look()

    def look(self) -> None:
        """Tell every seat whether a page of the browser that holds it is connected now."""
        for seat in self.lab.seats:
            with self._lock:
                pages = [p for p in self._pages.get(seat.number, []) if not p.closed_event.is_set()]
                self._pages[seat.number] = pages
            holder = seat.holder
            seat.seen(holder is not None and any(p.session_id == holder and connected(p) for p in pages))

    def _watch(self) -> None:
        stop = threading.Event()
        while not stop.wait(POLL_S):
            try:
                self.look()
            except Exception:  # noqa: BLE001 - a kernel torn down mid-look: the next look sees it gone
                continue


__all__ = ["POLL_S", "Presence", "connected", "presence_of"]
