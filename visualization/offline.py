"""Keep a Solara server on this machine, whoever started it: no telemetry, no check pages.

Solara reports usage to mixpanel (and asks api.ipify.org for the server's address)
when its server starts, and the first page it serves on a machine loads
``https://solara.dev/static/public/success.html`` in a hidden frame, to learn that
the install works. A research tool on a lab machine must not phone home, nor hang on
an offline one: every page and component of llm-mesa imports this module, which
turns both off in the server's own settings, so ``solara run`` of a user's script
that takes our components is as quiet as ``llm-mesa viz``. Solara's version check
(a request to PyPI) runs before any page is imported: only ``--no-check-version``
turns it off, which ``llm-mesa viz`` passes and the README's ``solara run`` commands
carry.
"""

from __future__ import annotations


def _no_check() -> bool:
    return False


def keep_solara_on_this_machine() -> None:
    """Solara's telemetry off, and its install checks (the hidden solara.dev frames) never drawn."""
    import solara.checks
    import solara.server.settings as settings

    settings.telemetry.mixpanel_enable = False  # read when the server starts, after the pages are imported
    solara.checks.should_perform_solara_check = _no_check  # both are looked up on the module at each page
    solara.checks.should_perform_jupyter_check = _no_check


keep_solara_on_this_machine()

__all__ = ["keep_solara_on_this_machine"]
