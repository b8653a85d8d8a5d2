"""The documentation holds together: README.md and docs/*.md (read through tests/documentation.py).

Every relative link and image resolves (its file, and its ``#anchor`` by GitHub's rules); every page under docs/
is linked from the README; the README stays a short entry (set-up, common tasks, a short session, the table of
commands, exit codes) whose table of commands has one row per command, worded as its spec's ``short_help``.
The examples themselves run in tests/test_examples.py, the exit-code table is checked in tests/test_exit_codes.py.
"""
from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

import pytest

from .documentation import (
    DOCS,
    README,
    ROOT,
    Link,
    anchors,
    doc_files,
    doc_name,
    github_anchor,
    headings,
    links,
    section,
)

EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)
"""A link with a scheme (``https:``, ``mailto:``) leaves the repository: not checked here."""


def _resolve(link: Link) -> str | None:
    """What is wrong with a relative link (None when it resolves): its file or folder must exist inside the
    repository, and an ``#anchor`` must be a heading's anchor of the Markdown page it names."""
    path, _, anchor = link.target.partition("#")
    page = link.page if not path else (link.page.parent / unquote(path)).resolve()
    if not page.is_relative_to(ROOT):
        return f"{link.target!r} leaves the repository"
    if not page.exists():
        return f"{link.target!r}: no such file or folder"
    if anchor:
        if page.suffix != ".md":
            return f"{link.target!r}: an anchor into a file that is not Markdown"
        if unquote(anchor) not in anchors(page.read_text()):
            return f"{link.target!r}: {doc_name(page)} has no heading with that anchor"
    return None


def _relative_links() -> list[Link]:
    return [link for page in doc_files() for link in links(page) if not EXTERNAL.match(link.target)]


def test_every_relative_link_resolves():
    found = _relative_links()
    assert len(found) > 40  # the reader sees the links (the README's contents alone hold more)
    broken = [f"{doc_name(link.page)}:{link.number}: {problem}" for link in found
              if (problem := _resolve(link)) is not None]
    assert broken == []


@pytest.mark.parametrize("heading, anchor", [
    ("`ckpt ls --tree`, `ckpt ls --names`, `ckpt graph`: the objects behind the keys",
     "ckpt-ls---tree-ckpt-ls---names-ckpt-graph-the-objects-behind-the-keys"),
    ("`ckpt stats PATH [KEY|GLOB...]`: did training diverge?", "ckpt-stats-path-keyglob-did-training-diverge"),
    ("`formats.tf`: TensorFlow's checkpoint API, without TensorFlow",
     "formatstf-tensorflows-checkpoint-api-without-tensorflow"),
    ("Keras 2 -> Keras 3", "keras-2---keras-3"),
    ("ckpt — TensorFlow and Keras checkpoints, without TensorFlow",
     "ckpt--tensorflow-and-keras-checkpoints-without-tensorflow"),
    ("**Bold** and [a link](https://example.com) and snake_case", "bold-and-a-link-and-snake_case"),
])
def test_github_anchor(heading, anchor):
    assert github_anchor(heading) == anchor


def test_repeated_headings_and_code_blocks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Usage\n\n```sh\n# not a heading\n```\n\n## Usage\n\n~~~\n## nor this\n~~~\n"
                    "  ```\n  # indented fence\n  ```\n### `a.b`: c [d](x.md)\n")
    assert [h.text for h in headings(page.read_text())] == ["Usage", "Usage", "`a.b`: c [d](x.md)"]
    assert anchors(page.read_text()) == {"usage", "usage-1", "ab-c-d"}
    assert [link.target for link in links(page)] == ["x.md"]


def test_broken_links_are_found(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "a.md"
    page.write_text("# A\n\n[ok](#a) [file](b.md) [gone](c.md) [no anchor](b.md#nope) [up](../README.md#a)\n"
                    "[image](pics/x.png) `[in code](nowhere.md)`\n")
    (tmp_path / "docs" / "b.md").write_text("# B\n")
    (tmp_path / "README.md").write_text("# A\n")
    monkeypatch.setattr("tests.test_docs.ROOT", tmp_path)
    monkeypatch.setattr("tests.documentation.ROOT", tmp_path)
    problems = {link.target: _resolve(link) for link in links(page)}
    assert problems == {"#a": None, "b.md": None, "c.md": "'c.md': no such file or folder",
                        "b.md#nope": "'b.md#nope': docs/b.md has no heading with that anchor",
                        "../README.md#a": None, "pics/x.png": "'pics/x.png': no such file or folder"}


def test_every_docs_page_is_linked_from_the_readme():
    linked = {posixpath.normpath(link.target.partition("#")[0]) for link in links(README)}
    pages = {doc_name(p) for p in sorted(DOCS.glob("*.md"))}
    assert pages - linked == set()


def test_the_readme_is_short():
    """What a newcomer reads first: the reference lives under docs/."""
    assert len(README.read_text().splitlines()) <= 400


def test_the_readme_keeps_the_test_command():
    """.ci/run runs the line after the marker: it must stay in the README, in its set-up section."""
    text = section("Set up")
    assert "<!-- test-command: .ci/run runs the next line verbatim -->" in text
    after = text.split("<!-- test-command", 1)[1].splitlines()
    assert any(line.strip().startswith("python3 ") for line in after[1:4])


def test_the_readme_has_a_row_per_command():
    """The table of commands: one row per command of the CLI, its text the spec's ``short_help`` (what
    ``ckpt --help`` prints beside it), its link a section of a page under docs/."""
    from ckpt_cli.command_table import COMMANDS, spec_of

    rows = re.findall(r"^\| \[`ckpt ([a-z-]+)`\]\(([^)\s]+)\) \| (.+?) \|$", section("Commands"), re.M)
    names = [name for name, _, _ in rows]
    assert sorted(names) == sorted(COMMANDS), "one row per command, each once"
    assert {name: text for name, _, text in rows} == {name: spec_of(name).short_help for name in COMMANDS}
    assert [name for name, target, _ in rows if not re.fullmatch(r"docs/[\w-]+\.md#[\w-]+", target)] == []
