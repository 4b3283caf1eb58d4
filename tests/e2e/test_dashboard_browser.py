"""The dashboard page in real headless Chromium: it draws, searches and lists tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowledge.index.project import Project
from tests.conftest import write_tree
from tests.e2e.chromium import Browser
from theus.dashboard.server import start_dashboard

FILES = {
    "src/shop/cart.py": (
        '"""Shopping cart."""\n'
        "from src.shop.pricing import price_of\n\n\n"
        "class ShoppingCart:\n"
        '    """Holds the line items of one order."""\n\n'
        "    def total(self, items):\n"
        "        return sum(price_of(i) for i in items)\n"
    ),
    "src/shop/pricing.py": "def price_of(item):\n    return item.price\n",
    "src/util/text.py": "def slug(text):\n    return text.lower()\n",
    "README.md": "# Shop\n\n## Install\n\nRun it.\n",
    "prisma/schema.prisma": (
        "model Customer {\n  id Int @id\n  email String\n}\n\n"
        "model Invoice {\n  id Int @id\n  customerId Int\n"
        "  customer Customer @relation(fields: [customerId], references: [id])\n}\n"
    ),
}

# Non-transparent pixels on the graph canvas: the page clears it to transparent between frames.
PAINTED = """(() => {
  const c = document.getElementById('graph');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
})()"""


# Opaque pixels in the file colour (#60a5fa): node cores, not just their glow.
FILE_CORES = """(() => {
  const c = document.getElementById('graph');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 230 && Math.abs(d[i] - 96) < 24 && Math.abs(d[i + 1] - 165) < 24
        && Math.abs(d[i + 2] - 250) < 24) n++;
  }
  return n;
})()"""

# Where a node is on the page, in CSS pixels.
WHERE = """((key) => {
  const n = window.__theus.state.byKey.get(key);
  const [x, y] = toScreen(n.x, n.y);
  const r = canvas.getBoundingClientRect();
  return [x + r.left, y + r.top];
})"""


@pytest.fixture
def page(tmp_path: Path) -> Iterator[tuple[Browser, str]]:
    project = Project(write_tree(tmp_path / "repo", FILES))
    project.index()
    assert {n.label for n in project.graph.nodes("table")} == {"Customer", "Invoice"}
    url, stop = start_dashboard(project)
    browser = Browser(1280, 800)
    try:
        yield browser, url
    finally:
        browser.close()
        stop()
        project.close()


def test_page_renders_searches_and_lists_tables(page: tuple[Browser, str]) -> None:
    browser, url = page
    browser.navigate(url)
    browser.wait_for("window.__theus && window.__theus.ready && window.__theus.state.nodes.length")
    assert browser.evaluate("location.search") == ""  # the token left the address bar
    assert browser.evaluate(PAINTED) > 500
    assert browser.evaluate(FILE_CORES) > 20

    # Clicking a node on the canvas selects it.
    x, y = browser.evaluate(f"{WHERE}('file:src/util/text.py')")
    browser.click(x, y)
    browser.wait_for(
        "window.__theus.state.selected && "
        "window.__theus.state.selected.key === 'file:src/util/text.py'"
    )
    browser.wait_for("document.getElementById('details-body').textContent.includes('text.py')")
    total = browser.evaluate("window.__theus.state.total")
    assert browser.evaluate("window.__theus.state.nodes.length") == total

    # Search: type, press Enter; the node is selected and its details are shown.
    browser.evaluate("document.getElementById('search').focus()")
    browser.insert_text("ShoppingCart")
    browser.wait_for(
        "document.querySelectorAll('#results li').length > 0 && "
        "!document.getElementById('results').hidden"
    )
    browser.press("Enter", 13)
    browser.wait_for("!document.getElementById('details').hidden")
    details = browser.wait_for(
        "(() => { const t = document.getElementById('details-body').textContent;"
        " return t.includes('ShoppingCart') && t.includes('Neighbours') ? t : ''; })()"
    )
    assert "src/shop/cart.py:5" in details
    assert "Holds the line items of one order." in details
    assert "total" in details  # a neighbour: the method it contains
    selected = browser.evaluate("window.__theus.state.selected.key")
    assert selected == "sym:src/shop/cart.py#ShoppingCart"

    # Kind and folder filters reload the view from the server.
    browser.evaluate(
        "[...document.querySelectorAll('#kinds .chip')]"
        ".find(c => c.textContent.startsWith('symbol')).click()"
    )
    browser.wait_for(
        "!window.__theus.state.loading && window.__theus.state.kinds.size > 0 && "
        "window.__theus.state.nodes.every(n => n.kind !== 'symbol')"
    )
    browser.evaluate(
        "const f = document.getElementById('folder'); f.value = 'src/shop';"
        " f.dispatchEvent(new Event('change'))"
    )
    browser.wait_for(
        "!window.__theus.state.loading && window.__theus.state.nodes.length > 0 && "
        "window.__theus.state.nodes.every(n => n.path.startsWith('src/shop/'))"
    )
    kinds = browser.evaluate("[...new Set(window.__theus.state.nodes.map(n => n.kind))]")
    assert kinds == ["file"]

    # Database tab: the fixture's Prisma models and the foreign key between them.
    browser.evaluate("document.querySelector('[data-tab=database]').click()")
    tables = browser.wait_for(
        "(() => { const t = document.getElementById('tables').textContent;"
        " return t.includes('Invoice') ? t : ''; })()"
    )
    assert "Customer" in tables and "customerId" in tables and "→ Customer.id" in tables

    # Status tab: counts from the same graph.
    browser.evaluate("document.querySelector('[data-tab=status]').click()")
    status = browser.wait_for(
        "(() => { const t = document.getElementById('status').textContent;"
        " return t.includes('table') ? t : ''; })()"
    )
    assert "index" in status.lower()
    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
    assert not errors, json.dumps(errors)[:500]


def test_page_without_token_explains_itself(page: tuple[Browser, str]) -> None:
    browser, url = page
    browser.navigate(url.split("?")[0])
    text = browser.wait_for(
        "(() => { const b = document.getElementById('banner');"
        " return b && !b.hidden ? b.innerText : ''; })()"
    )
    assert "theus dashboard" in text
    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
    assert not errors, json.dumps(errors)[:500]
