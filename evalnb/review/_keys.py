"""Key shortcuts for the review panel: an anywidget of evalnb's own (:file:`keys.js`).

The widget sits inside the panel and listens to the whole page: while the panel has the
focus or the pointer, or was clicked last, each key is stopped before JupyterLab's own
shortcuts see it (``d d`` never deletes a cell) and is sent to the kernel in order, where
:class:`KeyCapture` hands it to the panel. The ES module ships with the package, so it
works offline. Every message is answered (``ack``), which lets the front end tell a busy
kernel from a panel whose kernel restarted.

A few keys (``local``) act in the page and never reach the kernel: putting the focus in
the reason box, opening the sample list. Keys and button clicks that follow a change to
one of the panel's other controls (the list, a filter) wait for the kernel to have heard
of that change first (see :file:`keys.js`), so a verdict never lands on the sample shown
before a jump.

Each key and each click in the panel also carries the text of the panel's reason box,
handed to ``on_reason`` first: the box's own updates travel on its own comm and
ipywidgets holds them back while the kernel is busy, so without this a key pressed just
after typing could reach the kernel before the last characters typed. The text is taken
only when it was typed for the sample the kernel shows (``shown``, set by the panel after
the box): a key typed before the front end heard of a move brings no text to a new sample.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

__all__ = ["KeyCapture"]


class KeyCapture(anywidget.AnyWidget):
    """Hands each key typed in its panel to ``on_key``, one at a time, in order.

    ``hint`` is the line of help the widget shows. ``on_reason``, when given, gets the
    reason box's text sent with each key and click, before the key, when the front end
    had heard of the sample shown now (``shown``, the panel's name for it). ``local`` maps
    the keys the page handles itself to what they do there: ``"reason"`` focuses the
    reason box, ``"list"`` opens or closes the sample list. ``received`` counts the keys
    handled.
    """

    _esm = Path(__file__).with_name("keys.js")
    hint = traitlets.Unicode("").tag(sync=True)
    shown = traitlets.Unicode("").tag(sync=True)
    local = traitlets.Dict(value_trait=traitlets.Enum(["reason", "list"])).tag(sync=True)

    def __init__(
        self,
        on_key: Callable[[str], None],
        hint: str,
        on_reason: Callable[[str], None] | None = None,
        local: dict[str, str] | None = None,
    ):
        super().__init__(hint=hint, local=local or {})
        self._on_key = on_key
        self._on_reason = on_reason
        self.received = 0
        self.on_msg(self._handle)

    def _handle(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        try:
            reason = content.get("reason")
            fresh = content.get("shown") == self.shown
            if self._on_reason is not None and isinstance(reason, str) and fresh:
                self._on_reason(reason)
            if content.get("event") == "key" and isinstance(content.get("key"), str):
                self.received += 1
                self._on_key(content["key"])
        finally:
            self.send({"ack": content.get("seq")})
