"""The documentation as the tests read it: README.md and the pages under docs/ it links, as Markdown.

One reader for every test that checks what the documentation says (its examples run, its exit-code table,
its table of commands, its links): a test asks for a section by its heading (:func:`section`) or for the
code blocks of every page (:func:`code_blocks`), never for one file, so text can move between the README
and docs/ without a test reading the wrong page.

Markdown is read as GitHub renders it, as far as these checks need: fenced code blocks (a fence of three or
more backticks or tildes, indented at most three spaces, closed by a fence of the same kind at least as long)
hold no headings or links; a heading is an ATX heading (``#`` to ``######``) outside them; its anchor is
GitHub's (:func:`github_anchor`).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """Every documentation page: the README first, then docs/*.md by name."""
    return [README, *sorted(DOCS.glob("*.md"))]


def doc_name(path: Path) -> str:
    """A page's path relative to the repository root (``docs/commands.md``), as test ids and messages name it."""
    return path.relative_to(ROOT).as_posix()


class Line(NamedTuple):
    """One line of a page: its number (from 1), its text, and what it is: ``"open"`` or ``"close"`` (a code
    block's fences), ``"code"`` (inside a code block) or ``"text"``."""

    number: int
    text: str
    kind: str

    @property
    def fenced(self) -> bool:
        """Whether the line is part of a code block (its fences included)."""
        return self.kind != "text"


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def lines_of(text: str) -> list[Line]:
    """Every line of a page, each marked as code-block fence, code or text."""
    out, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE.match(line)
        if fence:
            closes = bool(match) and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and not match.group(2).strip()
            out.append(Line(number, line, "close" if closes else "code"))
            fence = "" if closes else fence
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
            out.append(Line(number, line, "open"))
        else:
            out.append(Line(number, line, "text"))
    return out


class CodeBlock(NamedTuple):
    """A fenced code block: the page, the line number of its opening fence, its info string (``sh``), and its
    lines (without the fences; the block's indentation left on them)."""

    page: Path
    number: int
    info: str
    lines: list[str]


def code_blocks(path: Path) -> list[CodeBlock]:
    """The fenced code blocks of a page, in order (one left open at the end of the page included)."""
    blocks: list[CodeBlock] = []
    for line in lines_of(path.read_text()):
        if line.kind == "open":
            blocks.append(CodeBlock(path, line.number, line.text.strip().lstrip("`~").strip(), []))
        elif line.kind == "code":
            blocks[-1].lines.append(line.text)
    return blocks


class Heading(NamedTuple):
    """An ATX heading: its level, its text as written (inline code and links unrendered), its line number."""

    level: int
    text: str
    number: int


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


def headings(text: str) -> list[Heading]:
    """The headings of a page outside its code blocks, in order."""
    out = []
    for line in lines_of(text):
        match = None if line.fenced else _HEADING.match(line.text)
        if match:
            out.append(Heading(len(match.group(1)), (match.group(2) or "").strip(), line.number))
    return out


def rendered(markdown: str) -> str:
    """The text of an inline Markdown span as rendered: code spans' backticks, links' and images' targets and
    emphasis markers (``*``) left out."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"(`+)(.+?)\1", r"\2", text)
    return text.replace("*", "")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading (without its ``-N`` suffix for repeats): the rendered text lowercased,
    every character but letters, digits, ``_``, ``-`` and spaces removed, each space a ``-``."""
    text = rendered(heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page has: each heading's, a repeated one suffixed ``-1``, ``-2``... as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(text):
        base = github_anchor(heading.text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


class Link(NamedTuple):
    """A link or image outside code: the page, its line number, its target as written."""

    page: Path
    number: int
    target: str


_CODE_SPAN = re.compile(r"(`+).+?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(path: Path) -> list[Link]:
    """The inline links and images of a page, outside code blocks and code spans."""
    out = []
    for line in lines_of(path.read_text()):
        if line.fenced:
            continue
        for match in _LINK.finditer(_CODE_SPAN.sub("", line.text)):
            out.append(Link(path, line.number, match.group(1)))
    return out


def section(heading: str) -> str:
    """The text under the heading whose rendered text is ``heading`` (on whichever page holds it), up to the next
    heading of the same or a higher level; exactly one page must have it."""
    found = []
    for path in doc_files():
        text = path.read_text()
        lines = text.splitlines()
        marks = headings(text)
        for i, mark in enumerate(marks):
            if rendered(mark.text) == heading:
                end = next((m.number for m in marks[i + 1:] if m.level <= mark.level), len(lines) + 1)
                found.append("\n".join(lines[mark.number:end - 1]) + "\n")
    assert len(found) == 1, f"{len(found)} sections headed {heading!r} in README.md and docs/*.md"
    return found[0]


def all_code_blocks() -> Iterator[CodeBlock]:
    """Every fenced code block of every page."""
    for path in doc_files():
        yield from code_blocks(path)
