"""The README a newcomer opens: the two commands first, a short quick start with the keys that do
most of it (each one the app's own binding, so a remapped or dropped key shows here), one picture,
then the reference behind a table of contents whose every link lands on a heading."""

from __future__ import annotations

import re
from pathlib import Path

from trt_tui.ui.commands import COMMANDS

README = Path(__file__).resolve().parent.parent.parent / "README.md"
QUICK_START_LINES = 60  # the quick start is read in one screen or two, not scrolled through


def _sections(text: str) -> tuple[str, str]:
    quick, _, reference = text.partition("\n## Reference\n")
    assert reference, "the README has no '## Reference' after its quick start"
    return quick, reference


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but `-` and `_`, spaces to `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_quick_start_is_two_commands_five_keys_and_one_picture():
    quick, _ = _sections(README.read_text())
    assert len(quick.splitlines()) <= QUICK_START_LINES, len(quick.splitlines())
    blocks = re.findall(r"```bash\n(.*?)```", quick, re.S)
    assert "pip install . && trt-tui --demo" in blocks[0]
    assert "pip install -e '.[dev,ray]' && pytest" in blocks[1] and "pytest tests/unit" in blocks[1]
    assert len(re.findall(r"!\[[^\]]*\]\((screenshots/[^)]+)\)", quick)) == 1
    (picture,) = re.findall(r"!\[[^\]]*\]\((screenshots/[^)]+)\)", quick)
    assert (README.parent / picture).is_file()
    rows = re.findall(r"^\| (`[^`]+`|Enter) \| ([^|]+) \|$", quick, re.M)
    assert len(rows) == 5, rows
    keys = {c.key_display or c.key for c in COMMANDS} | {"Enter"}
    for key, _words in rows:
        assert key.strip("`") in keys, f"{key} is no key of the app"


def test_every_link_of_the_table_of_contents_lands_on_a_heading():
    text = README.read_text()
    quick, reference = _sections(text)
    toc = reference.split("\n## ", 1)[0]
    anchors = re.findall(r"\]\(#([^)]+)\)", toc + quick)
    headings = {_slug(h) for h in re.findall(r"^#{2,3} (.+)$", text, re.M)}
    assert len(anchors) >= 20, anchors
    missing = [a for a in anchors if a not in headings]
    assert not missing, missing
    # and every section of the reference is in it
    sections = {_slug(h) for h in re.findall(r"^## (.+)$", reference, re.M)}
    assert sections <= set(anchors), sections - set(anchors)
