"""Every repository path a Markdown document names in backticks exists.

Documents point readers at files (`server/http/README.md`,
`bench/loadgen/run.sh`); a renamed or never-written file leaves a dead
reference that no build notices. This reads every tracked *.md file and
checks each backticked token that looks like a path into this repository.
"""
import pathlib
import re
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# Top-level folders of this repository: a backticked token starting with one
# of them (and holding a file name with an extension, or ending in "/") is a
# path we own.
ROOTS = ("bench", "deploy", "docs", "engine", "proto", "server", "tests", "tools", ".ci")
TOKEN = re.compile(r"`([^`\s]+)`")


def tracked_markdown():
    out = subprocess.run(["git", "-C", str(REPO), "ls-files", "*.md"], check=True,
                         capture_output=True, text=True).stdout
    return [REPO / line for line in out.splitlines() if line]


def repo_paths(text):
    for token in TOKEN.findall(text):
        token = token.rstrip(".,:;)")
        path = token.split("#")[0].split(":")[0]
        if not path.startswith(tuple(r + "/" for r in ROOTS)) or any(c in path for c in "*{}<>$…"):
            continue
        if path.endswith("/") or re.search(r"\.[A-Za-z0-9]+$", path.rsplit("/", 1)[-1]):
            yield path


def test_markdown_files_are_found():
    names = {p.relative_to(REPO).as_posix() for p in tracked_markdown()}
    assert "README.md" in names and "server/http/README.md" in names


@pytest.mark.parametrize("doc", tracked_markdown(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_named_paths_exist(doc):
    missing = sorted({p for p in repo_paths(doc.read_text(encoding="utf-8")) if not (REPO / p).exists()})
    assert not missing, f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"
