"""Fixtures: the built library, the demo App and our C fixture server.

CTest runs this suite with AURORA_MCP_LIB (the built libaurora-mcp) and
AURORA_MCP_BIN_DIR (the build's bin/, which holds aurora-mcp-demo-server
and aur-fixture-server).  Every test works on its own copy of a config
directory under tmp_path, so the repository's journal is never touched.
"""
import os
import shutil
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BIN = os.environ.get("AURORA_MCP_BIN_DIR", os.path.join(SRC, "build", "bin"))


@pytest.fixture(autouse=True)
def _build_bin_on_path(monkeypatch):
    """The demo App's command is looked up on PATH, as execvp does."""
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))


@pytest.fixture
def demo(tmp_path):
    """A fresh copy of examples/demo without its data/ (a journal left by
    running the demo in this tree; a fresh clone has none): the host
    makes it."""
    d = tmp_path / "demo"
    shutil.copytree(os.path.join(SRC, "examples", "demo"), d,
                    ignore=shutil.ignore_patterns("data"))
    return str(d)


def write_fixture_app(config_dir, package, *opts, timeout=5):
    """apps.d/<package>.ini running aur-fixture-server with opts; the
    server logs every message it gets to <config_dir>/<package>.log."""
    log = os.path.join(config_dir, f"{package}.log")
    args = "".join(f"arg = {a}\n" for a in ["--log", log, *opts])
    app = textwrap.dedent(f"""\
        [app]
        package = {package}
        enabled = true
        transport = stdio
        timeout_seconds = {timeout}

        [stdio]
        command = {os.path.join(BIN, "aur-fixture-server")}
        working_dir = .
        """) + args
    with open(os.path.join(config_dir, "apps.d", f"{package}.ini"), "w") as f:
        f.write(app)
    return log


@pytest.fixture
def fixture_dir(demo):
    """The demo config with its App replaced by nothing (add your own with
    write_fixture_app)."""
    for f in os.listdir(os.path.join(demo, "apps.d")):
        os.unlink(os.path.join(demo, "apps.d", f))
    with open(os.path.join(demo, "agents.ini"), "w") as f:
        f.write("")
    return demo
