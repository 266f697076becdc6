"""Prompt templates and the JSON schemas their answers must satisfy."""

from __future__ import annotations

GROUPING_PROMPT = """You are segmenting a section of a clinical evidence document into evidence windows.
Below are numbered atomic blocks (paragraphs, list items, table rows) in reading order.
Assign each block a group id so that consecutive blocks expressing one clinical point share a group.
Group ids are integers starting at 0, non-decreasing, and a group never skips blocks.

Section: {section}

{blocks}

Answer with JSON only: {{"group_ids": [<one integer per block, {n} in total>]}}"""

GROUPING_SCHEMA = {
    "type": "object",
    "properties": {"group_ids": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
    "required": ["group_ids"],
}
