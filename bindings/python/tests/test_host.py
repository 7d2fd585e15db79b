"""aurora_mcp.Host against real servers: the demo App (the TypeScript-free
C demo server over stdio) and our C fixture server for the bad days."""
import json
import math
import os
import subprocess
import sys
import threading

import pytest

import aurora_mcp
from aurora_mcp import (AuroraError, ConfigError, Host, StartupError,
                        ToolFailed)

from conftest import BIN, write_fixture_app

ADD = "aur.mcp.org.aurora.demo.add"


def test_version_is_the_cli_version():
    out = subprocess.run([os.path.join(BIN, "aurora-mcp"), "--version"],
                         capture_output=True, text=True, check=True).stdout
    assert aurora_mcp.version() in out


def test_demo_tools_and_calls(demo):
    with Host(demo) as host:
        ids = [t.id for t in host.tools]
        assert ids == sorted(ids) and ADD in ids
        add = next(t for t in host.tools if t.id == ADD)
        assert add.app == "org.aurora.demo" and add.raw_name == "add"
        assert add.input_schema["type"] == "object"
        assert "a" in add.input_schema["properties"]
        out = host.call(ADD, {"a": 2, "b": 40}, timeout=5.0)
        assert out.succeeded and json.loads(out.text) == {"sum": 42}
        assert out.observe == ["aurora:mcp:org.aurora.demo"]
        fail = host.call("aur.mcp.org.aurora.demo.fail", {})
        assert fail.failed and "always fails" in fail.text
        status = host.status()
        app = status["apps"][0]
        assert app["package"] == "org.aurora.demo"
        assert app["negotiated_version"] == "2026-07-28"
        assert host.restart_required is False
        assert "tools" not in status and "tools" in host.status(True)


def test_unknown_tool_fails_unsent(demo):
    with Host(demo) as host:
        out = host.call("aur.mcp.org.aurora.demo.ad", {"a": 1})
        assert out.failed and "did you mean" in out.text


@pytest.mark.parametrize("args", [[1, 2], "{}", {"x": math.nan},
                                  {"x": math.inf}])
def test_unusable_arguments_raise(demo, args):
    with Host(demo) as host:
        with pytest.raises(ValueError):
            host.call(ADD, args)


def test_bad_timeout_raises(demo):
    with Host(demo) as host:
        for t in (-1.0, math.nan, math.inf):
            with pytest.raises(ValueError):
                host.call(ADD, {"a": 1, "b": 2}, timeout=t)


def test_a_call_that_reached_a_hung_server_is_unknown(fixture_dir):
    log = write_fixture_app(fixture_dir, "org.test.hang", "--era", "modern",
                            "--hang-at", "call")
    with Host(fixture_dir) as host:
        out = host.call("aur.mcp.org.test.hang.t0000", {"text": "x"},
                        timeout=0.3)
        assert out.unknown, out
    with open(log) as f:  # it did reach the server
        assert sum("tools/call" in line for line in f) == 1


def test_a_server_that_dies_mid_call_is_unknown(fixture_dir):
    write_fixture_app(fixture_dir, "org.test.exit", "--era", "legacy",
                      "--exit-at", "call")
    with Host(fixture_dir) as host:
        assert host.call("aur.mcp.org.test.exit.t0000", {"text": "x"}).unknown
        # The App is gone now: later calls are not sent, and say so.
        assert host.call("aur.mcp.org.test.exit.t0000", {"text": "y"}).failed


def test_config_error_is_typed(demo):
    app = os.path.join(demo, "apps.d", "demo.ini")
    with open(app) as f:
        text = f.read()
    with open(app, "w") as f:
        f.write(text.replace("timeout_seconds", "timeout_secnds"))
    with pytest.raises(ConfigError) as e:
        Host(demo)
    err = e.value
    assert err.code == "config_invalid" and err.phase == "config"
    assert (err.file, err.key) == ("apps.d/demo.ini", "timeout_secnds")
    assert err.line == next(i for i, l in enumerate(text.splitlines(), 1)
                            if l.startswith("timeout_seconds"))
    assert "did you mean timeout_seconds" in err.message


def test_startup_error_names_app_and_phase(fixture_dir):
    write_fixture_app(fixture_dir, "org.test.down", "--era", "modern",
                      "--exit-at", "initialize", "--exit-at", "discover")
    with pytest.raises(StartupError) as e:
        Host(fixture_dir)
    assert not isinstance(e.value, ConfigError)
    assert e.value.code == "startup_failed"
    assert e.value.app == "org.test.down"
    assert e.value.phase == "connect"


def test_only_and_disable(demo):
    with pytest.raises(AuroraError) as e:
        Host(demo, only=["org.aurora.dem"])
    assert e.value.code == "config_invalid"
    with Host(demo, disable=["org.aurora.demo"]) as host:
        assert host.tools == []
        assert host.status()["apps"][0]["state"] == "disabled"
    with Host(demo, only=["org.aurora.demo"]) as host:
        assert ADD in [t.id for t in host.tools]


def test_builtins(demo):
    calls = []

    def echo(args):
        calls.append(args)
        return {"got": args}

    def refuse(args):
        raise ToolFailed("no: " + args.get("why", ""))

    def crash(args):
        raise RuntimeError("half done")

    with Host(demo, start=False) as host:
        host.add_builtin("aur.rt.echo", echo, description="Echo",
                         input_schema={"type": "object"})
        host.add_builtin("aur.rt.refuse", refuse)
        host.add_builtin("aur.rt.crash", crash)
        with pytest.raises(AuroraError) as e:
            host.add_builtin("Bad.Id", echo)
        assert e.value.code == "invalid_argument"
        host.start()
        with pytest.raises(AuroraError) as e:
            host.add_builtin("aur.rt.late", echo)
        assert e.value.code == "bad_state"
        big = 123456789012345678901234567890
        out = host.call("aur.rt.echo", {"n": big, "s": "Z\u00fcrich"})
        assert out.succeeded and json.loads(out.text) == {
            "got": {"n": big, "s": "Z\u00fcrich"}}
        assert calls == [{"n": big, "s": "Z\u00fcrich"}]
        out = host.call("aur.rt.refuse", {"why": "policy"})
        assert out.failed and out.text == "no: policy"
        out = host.call("aur.rt.crash", {})
        assert out.unknown and "RuntimeError: half done" in out.text
        tool = next(t for t in host.tools if t.id == "aur.rt.echo")
        assert tool.description == "Echo" and tool.app == ""


def test_status_while_start_runs(fixture_dir):
    """status() from this thread while start() runs on another: the App
    is held (--start-after) until a read has seen it starting."""
    go = os.path.join(fixture_dir, "go")
    write_fixture_app(fixture_dir, "org.test.held", "--tools", "3",
                      "--start-after", go, timeout=30)
    with Host(fixture_dir, start=False) as host:
        starter = threading.Thread(target=host.start)
        starter.start()
        seen = set()
        for _ in range(3000):  # 30 s at most
            app = host.status(with_tools=True)["apps"][0]
            seen.add(app["state"])
            if app["state"] == "starting":
                assert app["tool_ids"] == []
                open(go, "w").close()
                break
            starter.join(0.01)
        open(go, "w").close()  # never left waiting, whatever was seen
        starter.join()
        assert "starting" in seen
        app = host.status()["apps"][0]
        assert app["state"] == "ready" and len(app["tool_ids"]) == 3


def test_calls_from_many_threads(demo):
    results = {}

    def worker(k):
        for i in range(25):
            out = host.call(ADD, {"a": k, "b": i})
            results[(k, i)] = (out.status, json.loads(out.text)["sum"])

    with Host(demo) as host:
        threads = [threading.Thread(target=worker, args=(k,))
                   for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 200
    assert all(v == ("succeeded", k + i) for (k, i), v in results.items())


def test_journal_iterator(demo):
    with Host(demo) as host:
        host.call(ADD, {"a": 1, "b": 1})
    commits = list(aurora_mcp.journal(demo))
    kinds = [c["kind"] for c in commits]
    assert kinds[:3] == ["mcp.app.starting", "mcp.app.ready",
                         "mcp.catalog.frozen"]
    seqs = [c["seq"] for c in commits]
    assert seqs == sorted(seqs)
    later = list(aurora_mcp.journal(demo, after=seqs[1]))
    assert [c["seq"] for c in later] == seqs[2:]


def test_journal_follow_sees_commits_as_they_happen(demo):
    # the follower starts on an empty journal, then a host writes to it
    with aurora_mcp.follow_journal(demo, idle=0.05) as f:
        with Host(demo) as host:
            host.call(ADD, {"a": 2, "b": 3})
        got = []
        for c in f:
            got.append(c)
            if c["kind"] == "mcp.catalog.frozen":
                break
    assert [c["kind"] for c in got] == ["mcp.app.starting", "mcp.app.ready",
                                        "mcp.catalog.frozen"]
    assert [c["seq"] for c in got] == [1, 2, 3]
    # after= skips what was seen; close() ends an idle follow promptly
    f = aurora_mcp.follow_journal(demo, after=2, idle=0.05)
    assert next(f)["seq"] == 3
    f.close()
    assert list(f) == []


def test_closed_host_is_safe(demo):
    host = Host(demo)
    host.close()
    host.close()  # idempotent


def test_the_agent_runtime_example_runs(demo):
    example = os.path.join(os.path.dirname(__file__), "..", "examples",
                           "agent_runtime.py")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(__file__), "..")
    out = subprocess.run([sys.executable, example, demo], env=env,
                         capture_output=True, text=True, timeout=60,
                         check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith('{"tools": [{"name": "aur__mcp__org__aurora')
    add, fail, nope = (json.loads(l.split(" -> ", 1)[1]) for l in lines[1:])
    assert add == {"is_error": False, "content": '{"sum":42}'}
    assert fail["is_error"] and "did not run" in fail["content"]
    assert nope == {"is_error": True,
                    "content": "no tool named aur__mcp__org__aurora__demo__nope"}


def test_log_lines_reach_the_callback(demo):
    lines = []
    with Host(demo, log=lambda level, line: lines.append((level, line)),
              verbosity=1) as host:
        host.call(ADD, {"a": 1, "b": 2})
    assert any("app org.aurora.demo: ready with 5 tools" in l
               for _, l in lines), lines
    assert all(0 <= level <= 3 and "\n" not in l for level, l in lines)
