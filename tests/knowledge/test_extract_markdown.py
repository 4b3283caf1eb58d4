import time

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.index.extract.markdown import SUMMARY_LIMIT, extract
from knowledge.index.model import Extract

README = b"""\
---
title: Shop
---
Shop
====

A tiny shop. Totals come from `Cart.total`, settings from `parse_config()`.

## Install ##

```bash
# a shell comment, not a heading
pip install shop
```

Usage
-----

Call `shop.run` with a `--flag` and `foo/bar.py`.

### Details

~~~python
## still code
~~~

Details body.

# API

    # indented code, not a heading
#hashtag is a paragraph
# C#
"""


def outline(result: Extract) -> list[tuple[str, int, int, int]]:
    return [(s.title, s.level, s.line, s.end_line) for s in result.sections]


def test_headings_of_both_styles_with_end_lines() -> None:
    result = extract(README)
    assert result.language == "markdown"
    assert result.lines == 33
    assert outline(result) == [
        ("Shop", 1, 4, 28),
        ("Install", 2, 9, 15),
        ("Usage", 2, 16, 28),
        ("Details", 3, 21, 28),
        ("API", 1, 29, 32),
        ("C#", 1, 33, 33),
    ]


def test_section_summaries_skip_code_and_headings() -> None:
    summaries = {s.title: s.summary for s in extract(README).sections}
    assert summaries["Shop"].startswith("A tiny shop.")
    assert summaries["Install"] == ""  # only code in its body
    assert summaries["Usage"] == "Call `shop.run` with a `--flag` and `foo/bar.py`."
    assert summaries["Details"] == "Details body."
    assert summaries["API"] == "#hashtag is a paragraph"


def test_summary_is_first_h1_else_first_paragraph_line() -> None:
    assert extract(README).summary == "Shop"
    assert extract(b"## Sub\n\n  First line.  \nsecond\n").summary == "First line."
    assert extract(b"").summary == ""


def test_identifiers_are_symbol_like_code_spans_outside_code_blocks() -> None:
    assert extract(README).identifiers == {"Cart.total", "parse_config", "shop.run"}
    doc = b"Use `io::Read` and `Foo#bar`, not `1 + 2`.\n```\n`hidden`\n```\n"
    assert extract(doc).identifiers == {"io::Read", "Foo#bar"}


def test_summaries_skip_badges_images_html_and_table_rules() -> None:
    doc = b"""\
<p align="center"><img src="logo.png"></p>

[![CI](https://ci/badge.svg)](https://ci) ![cover](cover.png)

| --- | --- |
A memory for coding agents.

## Usage
<details>
Run it.
"""
    result = extract(doc)
    assert result.summary == "A memory for coding agents."
    assert result.sections[0].summary == "Run it."


def test_mdx_imports_are_not_the_summary() -> None:
    doc = b"import { Tabs } from './tabs'\nexport const meta = {}\n\n<Tabs>\nReal text.\n"
    assert extract(doc).summary == "Real text."


def test_end_line_runs_to_eof_and_nesting_closes_on_same_or_higher_level() -> None:
    doc = b"# A\n## B\n### C\n## D\ntext\n"
    assert outline(extract(doc)) == [
        ("A", 1, 1, 5),
        ("B", 2, 2, 3),
        ("C", 3, 3, 3),
        ("D", 2, 4, 5),
    ]


def test_setext_needs_a_paragraph_and_multi_line_titles_join() -> None:
    doc = b"Intro\n\n---\n\nTwo line\ntitle\n===\n- item\nlazy\n---\n"
    assert outline(extract(doc)) == [("Two line title", 1, 5, 10)]


def test_unclosed_fence_hides_the_rest() -> None:
    assert extract(b"# A\n```\n# B\n").sections[0].end_line == 3
    assert len(extract(b"# A\n```\n# B\n").sections) == 1


def test_long_summary_is_capped_and_crlf_is_handled() -> None:
    doc = b"# T\r\n\r\n" + b"word " * 100 + b"\r\n"
    result = extract(doc)
    assert len(result.sections[0].summary) <= SUMMARY_LIMIT
    assert result.sections[0].summary.endswith("…")
    assert result.lines == 3


def test_invalid_utf8_is_replaced() -> None:
    result = extract(b"# Caf\xe9\n\xff body\n")
    assert result.sections[0].title == "Caf\ufffd"
    assert result.sections[0].summary == "\ufffd body"


def test_huge_input_is_fast() -> None:
    doc = (b"# h\n\ntext `a.b`\n```\ncode\n```\nPara\n---\n" * 10_000) + b"`" * 100_000
    start = time.perf_counter()
    result = extract(doc)
    assert time.perf_counter() - start < 5
    assert len(result.sections) == 20_000


MARKDOWN_PIECES = st.sampled_from(
    ["#", "##", "######", "#######", " ", "\t", "\n", "\r\n", "=", "-", "---", "===", "```",
     "~~~", "`", "`x.y`", "text", "- ", "> ", "1. ", "    ", "+++", "\ufeff", "\x00", "\xe9"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=500))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    _check_invariants(extract(data))


@settings(max_examples=300, deadline=None)
@given(st.lists(MARKDOWN_PIECES, max_size=80))
def test_markdown_soup_never_raises(pieces: list[str]) -> None:
    _check_invariants(extract("".join(pieces).encode()))


def _check_invariants(result: Extract) -> None:
    for section in result.sections:
        assert 1 <= section.line <= section.end_line <= result.lines
        assert 1 <= section.level <= 6
        assert section.title
