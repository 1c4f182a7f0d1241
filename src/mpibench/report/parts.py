"""What one section of the report shows: its tables, its figures (matplotlib, rendered to
SVG only when the HTML asks) and, for the comparison, the Comparison itself (its Markdown
has its own renderer). Section builders return a Part; report/html.py only lays Parts out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpibench.report.model import Comparison
from mpibench.report.render import Table


@dataclass
class Figure:
    name: str
    caption: str
    fig: Any                  # matplotlib Figure (rendered lazily)
    _svg: str | None = None

    @property
    def svg(self) -> str:
        if self._svg is None:
            from mpibench.report import plots

            self._svg = plots.to_svg(self.fig)
        return self._svg


@dataclass
class Part:
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    intro: str | None = None                 # replaces the section's own intro when set
    comparison: Comparison | None = None     # Markdown: render_markdown of the comparison


__all__ = ["Figure", "Part"]
