"""The README's feature and speed tables, one source for the README and the site.

``readme_section(title)`` returns a ``## title`` section of the repository's README.md (up to
the next ``## `` heading); the Sphinx hook ``write_pages`` copies each section named in
``SECTIONS`` into ``docs/generated/<page>.md`` before the build reads its sources, so the
site's pages are the README's text. ``table_rows`` parses a section's Markdown table into
plain cell texts; ``docs/check_readme_tables.py`` compares them with the built HTML tables.
"""

from __future__ import annotations

import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md")

# generated page -> the README section it copies
SECTIONS = {"features": "Features against PyTorch", "speed": "Speed beside PyTorch"}


def readme_section(title: str, readme: str = README) -> str:
    """The body of README's ``## {title}`` section, heading excluded.

    Raises:
        LookupError: the README has no such section.
    """
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if match is None:
        raise LookupError(f"README.md has no section '## {title}'")
    return match.group(1).strip() + "\n"


def _plain(cell: str) -> str:
    # what a reader sees of a Markdown cell: no code ticks, emphasis stars or escapes
    cell = cell.replace("\\|", "|")
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    cell = cell.replace("`", "").replace("**", "")
    return " ".join(cell.split())


def _split_row(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    return [_plain(c) for c in re.split(r"(?<!\\)\|", inner)]


def table_rows(section: str) -> list[list[str]]:
    """Rows (header first) of the first Markdown table in ``section``, as plain cell texts."""
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip()):
                continue  # the alignment row
            rows.append(_split_row(line))
        elif rows:
            break
    return rows


def write_pages(app) -> None:
    out = os.path.join(app.srcdir, "generated")
    os.makedirs(out, exist_ok=True)
    for page, title in SECTIONS.items():
        text = (f"# {title}\n\n<!-- generated from the README's '## {title}' section: edit the README -->\n\n"
                + readme_section(title))
        tmp = os.path.join(out, page + ".md.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out, page + ".md"))


def setup(app):
    app.connect("builder-inited", write_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
