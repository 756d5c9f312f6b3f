"""Checks the built site in a real browser: Debian's headless Chromium driven by selenium.

The site (``docs/_build/html``) is served on 127.0.0.1 at a free port; every page is opened
and must load without a console error; every link to the site itself, as the loaded page holds
it, must name a file of the build and, with a ``#fragment``, an element of that file with
that id; the search page must list a result for each term of ``SEARCHES``. Screenshots of the
home page and of one API page are written to ``--screenshots``.

    python docs/check_site.py [--html docs/_build/html] [--screenshots docs/_build/screenshots]
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import os
import sys
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

DOCS = os.path.dirname(os.path.abspath(__file__))
SEARCHES = ("Conv2d", "SentenceTransformer", "DistributedDataParallel")
SCREENSHOTS = {"home.png": "index.html", "api-ember-nn.png": "api/ember.nn.html"}
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


class _Ids(html.parser.HTMLParser):
    """Collects the ``id`` and ``name`` attributes of a page: the targets of its fragments."""

    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)


@functools.lru_cache(maxsize=None)
def page_ids(path: str) -> frozenset:
    parser = _Ids()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return frozenset(parser.ids)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def serve(root: str) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_QuietHandler, directory=root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def site_pages(root: str) -> list[str]:
    pages = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        pages += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".html")]
    return sorted(pages)


def broken_link(url: str, base: str, root: str) -> str | None:
    """Why an internal ``url`` does not resolve, or None when it does."""
    parts = urllib.parse.urlsplit(url)
    path = urllib.parse.unquote(parts.path[len(urllib.parse.urlsplit(base).path):])
    target = os.path.join(root, path)
    if os.path.isdir(target):
        target = os.path.join(target, "index.html")
    if not os.path.isfile(target):
        return f"no file {path!r}"
    if parts.fragment and target.endswith(".html"):
        if urllib.parse.unquote(parts.fragment) not in page_ids(target):
            return f"no element #{parts.fragment} in {path!r}"
    return None


def check_pages(driver, base: str, root: str) -> list[str]:
    problems = []
    for page in site_pages(root):
        if page == "search.html":
            continue  # opened with a query below
        driver.get(base + page)
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                problems.append(f"{page}: console error: {entry['message']}")
        links = driver.execute_script("return Array.from(document.querySelectorAll('a[href]'), a => a.href)")
        for url in set(links):
            if url.startswith(base):
                why = broken_link(url, base, root)
                if why:
                    problems.append(f"{page}: link {url[len(base):]}: {why}")
    return problems


def check_search(driver, base: str) -> list[str]:
    problems = []
    for term in SEARCHES:
        driver.get(f"{base}search.html?q={urllib.parse.quote(term)}")
        try:
            WebDriverWait(driver, 60).until(
                lambda d, term=term: any(term in a.text
                                         for a in d.find_elements(By.CSS_SELECTOR, "#search-results li a")))
        except Exception:
            problems.append(f"search: no result for {term!r}")
        for entry in driver.get_log("browser"):
            if entry["level"] == "SEVERE":
                problems.append(f"search {term!r}: console error: {entry['message']}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=os.path.join(DOCS, "_build", "html"), help="the built site")
    parser.add_argument("--screenshots", default=os.path.join(DOCS, "_build", "screenshots"),
                        help="folder the screenshots are written to")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.html)
    if not os.path.isfile(os.path.join(root, "index.html")):
        raise SystemExit(f"no built site at {root} (expected index.html): build it first")
    started = time.perf_counter()
    server, base = serve(root)
    driver = browser()
    try:
        problems = check_pages(driver, base, root)
        problems += check_search(driver, base)
        os.makedirs(args.screenshots, exist_ok=True)
        for name, page in SCREENSHOTS.items():
            driver.get(base + page)
            WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
            tmp = os.path.join(args.screenshots, name + ".part.png")
            if not driver.save_screenshot(tmp):
                problems.append(f"screenshot of {page} failed")
            else:
                os.replace(tmp, os.path.join(args.screenshots, name))
    finally:
        driver.quit()
        server.shutdown()
    pages = len(site_pages(root))
    for problem in problems:
        print(problem)
    print(f"{pages} pages, {len(SEARCHES)} searches checked in Chromium in {time.perf_counter() - started:.0f} s: "
          f"{len(problems)} problems; screenshots in {args.screenshots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
