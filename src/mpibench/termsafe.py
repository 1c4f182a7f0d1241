"""Text from files, stores and users reaches the terminal as text, never as control sequences.

A label, campaign name, reason or stderr line may hold ESC sequences (colours, cursor moves,
an OSC that sets the window title or writes to the clipboard), backspaces that overwrite what
a table shows, or bidi overrides that reorder it. Every rich console mpibench prints through
is a SafeConsole: each string it renders (table cells, titles, printed lines) has those
characters replaced by U+FFFD before rich styles it; rich's own styling is added afterwards.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.segment import Segment

# C0 controls but tab and newline, DEL, C1 controls, and the bidi embedding/override/isolate
# characters ("Trojan Source"): nothing a table cell needs, all things that change a screen.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def safe_text(text: str) -> str:
    return _UNSAFE.sub("\ufffd", text)


class SafeConsole(Console):
    """Strings become text before markup is read (render_str), and every segment of every
    renderable (Text objects, tables built elsewhere) is cleaned on its way out (render):
    rich's own control segments and the styles it turns into escape codes are untouched."""

    def render_str(self, text: str, *args, **kwargs):
        return super().render_str(safe_text(text), *args, **kwargs)

    def render(self, renderable, options=None):
        for seg in super().render(renderable, options):
            if seg.control is None and _UNSAFE.search(seg.text):
                seg = Segment(safe_text(seg.text), seg.style, seg.control)
            yield seg
