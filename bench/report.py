"""The printed result: a Markdown table of every row, and the list of targets missed."""

from __future__ import annotations

from collections.abc import Sequence

from .measure import Row, Section

__all__ = ["failures", "table"]

_HEADER = (
    "| benchmark | contender | median | ratio | target | result |",
    "|---|---|---:|---:|---|---|",
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _result(row: Row) -> str:
    if row.passed is None:
        return ""
    return "pass" if row.passed else "**FAIL**"


def table(sections: Sequence[Section]) -> str:
    """Render every section's rows as one Markdown table."""
    lines = list(_HEADER)
    for section in sections:
        for row in section.rows:
            cells = (row.benchmark, row.contender, row.median, row.ratio, row.target)
            lines.append("| " + " | ".join(_cell(cell) for cell in cells) + f" | {_result(row)} |")
    return "\n".join(lines)


def failures(sections: Sequence[Section]) -> list[str]:
    """One line per row whose target was missed, saying by how much."""
    return [
        f"{row.benchmark}, {row.contender}: {row.shortfall}"
        for section in sections
        for row in section.rows
        if row.passed is False
    ]
