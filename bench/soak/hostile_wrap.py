#!/usr/bin/env python3
"""hostile_wrap.py - keep a stdio MCP App hostile for as long as it runs.

usage: hostile_wrap.py [--notify-rate R] [--event-rate R] [--stderr-rate R]
                       [--stderr-long-every K] -- COMMAND [ARG]...

Runs COMMAND (an aur-fixture-server) with pipes on its stdin and stdout,
relays the host's lines to it and its lines back, and once the first
tools/call has gone through (the host has activated: no startup budget is
involved) adds, until the end:

  --notify-rate R    R notifications/message a second on stdout
  --event-rate R     R world events a second on stdout, each with a new
                     event_id (soak-<pid>-<i>), as the fixture's
                     --event-flood writes them
  --stderr-rate R    R stderr lines a second (about 80 bytes; every K-th
  --stderr-long-every K   one, default 100, is 10000 bytes, over the
                     default stderr_line_bytes, so it is truncated)

The fixture's own options do the one-shot faults (its --flood happens
inside the handshake and blocks it, --event-flood happens once); this
wrapper makes the flood steady for the whole soak.  It also stands for an
npx/uv-style wrapper that does not exec: a second process per App that
must not outlive the host.  Whole lines only: the relay and the pacer
write under one lock.  When the child's stdout ends, the wrapper exits
with the child's status (or dies of its signal).
"""
import os
import signal
import subprocess
import sys
import threading
import time

TICK = 0.02  # pacer period, seconds


def parse(argv):
    opts = {"notify": 0.0, "event": 0.0, "stderr": 0.0, "long_every": 100}
    names = {"--notify-rate": "notify", "--event-rate": "event",
             "--stderr-rate": "stderr", "--stderr-long-every": "long_every"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return opts, argv[i + 1:]
        if a in names and i + 1 < len(argv):
            key = names[a]
            opts[key] = (int(argv[i + 1]) if key == "long_every"
                         else float(argv[i + 1]))
            i += 2
            continue
        sys.stderr.write("hostile_wrap: bad option %r (see the header)\n" % a)
        sys.exit(2)
    sys.stderr.write("hostile_wrap: missing -- COMMAND\n")
    sys.exit(2)


def main():
    opts, cmd = parse(sys.argv[1:])
    if not cmd:
        sys.exit(2)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    out = sys.stdout.buffer
    err = sys.stderr.buffer
    lock = threading.Lock()
    activated = threading.Event()
    done = threading.Event()

    def write_lines(lines):
        with lock:
            out.write(b"".join(lines))
            out.flush()

    def relay_in():
        # host -> child; the first tools/call starts the pacer
        try:
            for line in sys.stdin.buffer:
                if not activated.is_set() and b'"tools/call"' in line:
                    activated.set()
                child.stdin.write(line)
                child.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            child.stdin.close()
        except OSError:
            pass

    def pacer():
        activated.wait()
        pid = os.getpid()
        t0 = time.monotonic()
        sent = {"notify": 0, "event": 0, "stderr": 0}
        while not done.is_set():
            el = time.monotonic() - t0
            lines = []
            due = int(el * opts["notify"]) - sent["notify"]
            for _ in range(max(0, due)):
                lines.append(
                    b'{"jsonrpc":"2.0","method":"notifications/message",'
                    b'"params":{"level":"info","logger":"hostile-wrap",'
                    b'"data":"flood %d"}}\n' % sent["notify"])
                sent["notify"] += 1
            due = int(el * opts["event"]) - sent["event"]
            for _ in range(max(0, due)):
                lines.append(
                    b'{"jsonrpc":"2.0","method":'
                    b'"notifications/org.aurorabot/world-events/event",'
                    b'"params":{"event_id":"soak-%d-%d","scope":"flood:1",'
                    b'"kind":"test.flood","occurred_at":'
                    b'"2026-12-02T07:00:00Z","summary":"soak"}}\n'
                    % (pid, sent["event"]))
                sent["event"] += 1
            if lines:
                write_lines(lines)
            due = int(el * opts["stderr"]) - sent["stderr"]
            if due > 0:
                chunk = []
                for _ in range(due):
                    i = sent["stderr"]
                    if opts["long_every"] and i % opts["long_every"] == 0:
                        chunk.append(b"hostile-wrap: long stderr line %d "
                                     % i + b"y" * 10000 + b"\n")
                    else:
                        chunk.append(b"hostile-wrap: stderr line %d of a "
                                     b"storm that never ends ........\n" % i)
                    sent["stderr"] += 1
                err.write(b"".join(chunk))
                err.flush()
            time.sleep(TICK)

    threading.Thread(target=relay_in, daemon=True).start()
    if opts["notify"] or opts["event"] or opts["stderr"]:
        threading.Thread(target=pacer, daemon=True).start()
    try:
        for line in child.stdout:  # child -> host, whole lines
            write_lines([line])
    except (BrokenPipeError, OSError):
        pass
    done.set()
    rc = child.wait()
    if rc < 0:
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    os._exit(rc)


if __name__ == "__main__":
    main()
