"""The site's feature and speed pages show the README's tables: same rows, same cells.

The pages are generated from the README's sections (``docs/_ext/readme_sections.py``); this
check reads the built HTML back and compares each table, cell by cell as a reader sees it
(code ticks and emphasis aside), with the README's Markdown table.

    python docs/check_readme_tables.py [--html docs/_build/html]
"""

from __future__ import annotations

import argparse
import html.parser
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))
from readme_sections import SECTIONS, readme_section, table_rows  # noqa: E402


class _Tables(html.parser.HTMLParser):
    """The rows of the first ``<table>`` of a page, as lists of cell texts."""

    def __init__(self):
        super().__init__()
        self.rows, self._cell, self._depth, self._done = [], None, 0, False

    def handle_starttag(self, tag, attrs):
        if self._done:
            return
        if tag == "table":
            self._depth += 1
        elif tag == "tr" and self._depth:
            self.rows.append([])
        elif tag in ("td", "th") and self._depth:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table" and self._depth:
            self._depth -= 1
            self._done = not self._depth

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_rows(path: str) -> list[list[str]]:
    parser = _Tables()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser.rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "_build", "html"))
    args = parser.parse_args(argv)
    problems = 0
    for page, title in SECTIONS.items():
        readme = table_rows(readme_section(title))
        site = html_rows(os.path.join(args.html, "generated", page + ".html"))
        if not readme:
            print(f"README '## {title}': no table")
            problems += 1
            continue
        if len(site) != len(readme):
            print(f"{page}: {len(site)} table rows on the site, {len(readme)} in the README")
            problems += 1
        for i, (ours, theirs) in enumerate(zip(site, readme)):
            if ours != theirs:
                print(f"{page}: row {i} differs:\n  site:   {ours}\n  README: {theirs}")
                problems += 1
        print(f"{page}: {len(readme)} rows of README '## {title}' compared with the site")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
