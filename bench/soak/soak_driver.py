#!/usr/bin/env python3
"""soak_driver.py - drive one `aurora-mcp serve` against hostile Apps and
judge what it cost the host.  Run by scripts/hostile-soak.sh, which writes
the config directory and the App manifest; see its header for the checks.

usage: soak_driver.py --aurora BIN --config DIR --manifest FILE --out DIR
                      [--seconds S] [--rate R] [--inflight K]
                      [--status-every S] [--rss-pct P] [--rss-mib M]
                      [--startup-timeout S] [--shutdown-timeout S]
                      [--leftover-wait S]

The manifest has one App a line: package<TAB>short name<TAB>expect<TAB>
what it does; expect is "ok" (every call succeeds) or "crash" (the calls
in flight when it dies are unknown, at most --inflight of them, later
ones failed: the App is gone).

Writes DIR/samples.csv (one row a second), DIR/calls.csv (per App),
DIR/summary.md (the table printed at the end) and keeps the host's stderr
in DIR/host.log.  Exit status 0 only if every check passed, 1 otherwise.
"""
import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- /proc ---------------------------------------------------------------

def proc_stat(pid):
    """(comm, ppid, starttime, utime+stime ticks, state) or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            s = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    lp, rp = s.find("("), s.rfind(")")
    rest = s[rp + 2:].split()
    # rest[0] is state (field 3); ppid field 4, utime 14, stime 15, start 22
    return (s[lp + 1:rp], int(rest[1]), int(rest[19]),
            int(rest[11]) + int(rest[12]), rest[0])


def host_sample(pid):
    """(VmRSS, Threads, open fds, RssAnon, RssFile, RssShmem) or None."""
    v = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, rest = line.partition(":")
                if k in ("VmRSS", "Threads", "RssAnon", "RssFile",
                         "RssShmem"):
                    v[k] = int(rest.split()[0])
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None
    if "VmRSS" not in v or "Threads" not in v:
        return None
    return (v["VmRSS"], v["Threads"], fds, v.get("RssAnon", -1),
            v.get("RssFile", -1), v.get("RssShmem", -1))


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root):
    """{(pid, starttime): (comm, state)} of every descendant of root."""
    kids = {}
    info = {}
    for p in all_pids():
        st = proc_stat(p)
        if st is None:
            continue
        info[p] = st
        kids.setdefault(st[1], []).append(p)
    out = {}
    todo = list(kids.get(root, []))
    while todo:
        p = todo.pop()
        st = info.get(p)
        if st is None:
            continue
        out[(p, st[2])] = (st[0], st[4])
        todo.extend(kids.get(p, []))
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8",
                                                        "replace").strip()
    except OSError:
        return "?"


def alive(key):
    st = proc_stat(key[0])
    return st is not None and st[2] == key[1]


def under_dir(run_dir):
    """Processes (other than us) whose cwd is run_dir or below it."""
    me = os.getpid()
    found = {}
    for p in all_pids():
        if p == me:
            continue
        try:
            cwd = os.readlink("/proc/%d/cwd" % p)
        except OSError:
            continue
        if cwd == run_dir or cwd.startswith(run_dir + "/"):
            st = proc_stat(p)
            if st:
                found[(p, st[2])] = st[0]
    return found


def cgroups_left(host_pid):
    """Names of aurora-mcp-<host_pid>-* cgroups still in our cgroup v2."""
    mount = rel = None
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split(" - ")
                if len(parts) == 2 and parts[1].startswith("cgroup2 "):
                    mount = parts[0].split()[4]
        with open("/proc/self/cgroup") as f:
            for line in f:
                if line.startswith("0::"):
                    rel = line[3:].strip()
    except OSError:
        return []
    if not mount or rel is None:
        return []
    d = os.path.join(mount, rel.lstrip("/"))
    try:
        return sorted(n for n in os.listdir(d)
                      if n.startswith("aurora-mcp-%d-" % host_pid))
    except OSError:
        return []


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


# --- statistics -----------------------------------------------------------

def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(round(p / 100.0 * (len(v) - 1)))))
    return v[k]


def mib(kib):
    return kib / 1024.0


# --- the driver ------------------------------------------------------------

class Soak:
    def __init__(self, a):
        self.a = a
        self.apps = []  # dicts: pkg, name, expect, what, tool
        with open(a.manifest) as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                pkg, name, expect, what = line.rstrip("\n").split("\t", 3)
                self.apps.append({
                    "pkg": pkg, "name": name, "expect": expect, "what": what,
                    "tool": "aur.mcp.%s.t0000" % pkg, "inflight": 0,
                    "next": 0.0, "sent": 0, "status": {}, "lat": [],
                    "state": "?", "last_error": None, "ext": None,
                    "states_seen": []})
        self.by_pkg = {x["pkg"]: x for x in self.apps}
        self.lock = threading.Lock()
        self.pending = {}  # id -> (kind, app or None, t_sent)
        self.next_id = 1
        self.answers = 0
        self.bad_lines = 0
        self.dup_or_unknown_ids = 0
        self.status_answers = 0
        self.status_errors = 0
        self.ready = None  # the ready line, parsed
        self.startup_error = None
        self.stdout_eof = threading.Event()
        self.ready_evt = threading.Event()
        self.wq = queue.Queue()
        # (t, rss, threads, fds, app procs, cpu ticks, load, zombies,
        #  rss_anon, rss_file, rss_shmem); sizes in KiB, t from launch
        self.samples = []
        self.seen_procs = {}  # (pid, start) -> comm
        self.shutdown_answer = None
        self.failures = []

    # -- I/O threads
    def writer(self):
        while True:
            line = self.wq.get()
            if line is None:
                break
            try:
                self.host.stdin.write(line)
                self.host.stdin.flush()
            except (BrokenPipeError, OSError):
                break
        try:
            self.host.stdin.close()
        except OSError:
            pass

    def reader(self):
        for raw in self.host.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                with self.lock:
                    self.bad_lines += 1
                continue
            if not isinstance(msg, dict):
                with self.lock:
                    self.bad_lines += 1
                continue
            if self.ready is None and self.startup_error is None:
                if msg.get("ready") is True:
                    self.ready = msg
                else:
                    self.startup_error = msg
                self.ready_evt.set()
                continue
            self.on_answer(msg)
        self.stdout_eof.set()
        self.ready_evt.set()

    def on_answer(self, msg):
        now = time.monotonic()
        rid = msg.get("id")
        with self.lock:
            ent = self.pending.pop(rid, None) if isinstance(rid, int) else None
            if ent is None:
                self.dup_or_unknown_ids += 1
                return
            self.answers += 1
            kind, app, t0 = ent
            if kind == "call":
                app["inflight"] -= 1
                if "result" in msg and isinstance(msg["result"], dict):
                    key = str(msg["result"].get("status", "no-status"))
                else:
                    err = msg.get("error") or {}
                    key = "error:%s" % err.get("code", "?")
                app["status"][key] = app["status"].get(key, 0) + 1
                app["lat"].append(now - t0)
            elif kind == "status":
                self.status_answers += 1
                res = msg.get("result")
                if not isinstance(res, dict):
                    self.status_errors += 1
                    return
                for st in res.get("apps", []):
                    x = self.by_pkg.get(st.get("package"))
                    if not x:
                        continue
                    x["state"] = st.get("state")
                    x["last_error"] = st.get("last_error")
                    if not x["states_seen"] or x["states_seen"][-1][1] != \
                            x["state"]:
                        x["states_seen"].append((now, x["state"]))
                    ext = st.get("extension_status") or {}
                    we = ext.get("org.aurorabot/world-events")
                    if we:
                        x["ext"] = we
            elif kind == "shutdown":
                self.shutdown_answer = msg

    def send(self, kind, app, obj):
        with self.lock:
            rid = self.next_id
            self.next_id += 1
            obj["id"] = rid
            self.pending[rid] = (kind, app, time.monotonic())
            if app is not None:
                app["inflight"] += 1
                app["sent"] += 1
        self.wq.put((json.dumps(obj, separators=(",", ":")) + "\n").encode())

    # -- sampling
    def sample(self, t):
        hs = host_sample(self.host.pid)
        st = proc_stat(self.host.pid)
        procs = descendants(self.host.pid)
        self.seen_procs.update((k, v[0]) for k, v in procs.items())
        if hs is None or st is None:
            return False
        zombies = sum(1 for v in procs.values() if v[1] == "Z")
        self.samples.append((t, hs[0], hs[1], hs[2], len(procs), st[3],
                             loadavg(), zombies, hs[3], hs[4], hs[5]))
        return True

    # -- the run
    def run(self):
        a = self.a
        self.log = open(os.path.join(a.out, "host.log"), "wb")
        self.t_launch = time.monotonic()
        self.load_start = loadavg()
        self.host = subprocess.Popen(
            [a.aurora, "serve", "-c", a.config], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.log, cwd=a.config)
        threading.Thread(target=self.reader, daemon=True).start()
        threading.Thread(target=self.writer, daemon=True).start()
        try:
            return self.run_inner()
        except KeyboardInterrupt:
            print("soak_driver: interrupted; SIGTERM to the host",
                  file=sys.stderr)
            self.stop_host(hard=True)
            raise

    def stop_host(self, hard=False):
        if self.host.poll() is None:
            self.host.send_signal(signal.SIGTERM)
            try:
                self.host.wait(30)
            except subprocess.TimeoutExpired:
                self.host.kill()
                self.host.wait()

    def run_inner(self):
        a = self.a
        # startup: sample until the ready line (or an error)
        deadline = self.t_launch + a.startup_timeout
        nxt = self.t_launch
        while not self.ready_evt.is_set():
            now = time.monotonic()
            if now >= nxt:
                self.sample(now - self.t_launch)
                nxt += 1.0
            if now > deadline:
                self.failures.append("no ready line within %d s"
                                     % a.startup_timeout)
                self.stop_host(hard=True)
                return self.finish(started=False)
            self.ready_evt.wait(0.1)
        if self.ready is None:
            self.failures.append("startup failed: %s" % json.dumps(
                self.startup_error) if self.startup_error else
                "the host exited during startup")
            self.stop_host()
            return self.finish(started=False)
        self.t_ready = time.monotonic()
        self.startup_s = self.t_ready - self.t_launch
        print("soak_driver: ready after %.1f s (%s tools); soaking %d s"
              % (self.startup_s, self.ready.get("tools"), a.seconds),
              file=sys.stderr)
        self.n_startup_samples = len(self.samples)
        self.sample(time.monotonic() - self.t_launch)
        t_end = self.t_ready + a.seconds
        period = 1.0 / a.rate
        for x in self.apps:
            x["next"] = self.t_ready
        nxt_sample = self.t_ready + 1.0
        nxt_status = self.t_ready
        nxt_note = self.t_ready + 60.0
        while True:
            now = time.monotonic()
            if now >= t_end:
                break
            if self.host.poll() is not None:
                self.failures.append("the host exited during the soak "
                                     "(status %s)" % self.host.returncode)
                break
            for x in self.apps:
                if x["inflight"] < a.inflight and now >= x["next"]:
                    self.send("call", x, {"op": "call", "tool": x["tool"],
                                          "arguments": {"text": "soak"}})
                    # no catch-up bursts after a stall
                    x["next"] = max(x["next"] + period, now - period)
            if now >= nxt_status:
                self.send("status", None, {"op": "status"})
                nxt_status += a.status_every
            if now >= nxt_sample:
                self.sample(now - self.t_launch)
                nxt_sample += 1.0
                if nxt_sample < now:
                    nxt_sample = now + 1.0
            if now >= nxt_note:
                s = self.samples[-1]
                print("soak_driver: %4.0f s: rss %.1f MiB, %d fds, %d "
                      "threads, %d answers, load %.1f"
                      % (now - self.t_ready, mib(s[1]), s[3], s[2],
                         self.answers, s[6]), file=sys.stderr)
                nxt_note += 60.0
            time.sleep(0.01)
        self.t_end = time.monotonic()
        self.sample(self.t_end - self.t_launch)
        self.n_soak_end = len(self.samples)
        # one last status, answered before the shutdown
        self.send("status", None, {"op": "status"})
        t0 = time.monotonic()
        while any(k == "status" for k, _, _ in list(self.pending.values())) \
                and time.monotonic() - t0 < 10 and self.host.poll() is None:
            time.sleep(0.05)
        self.t_shutdown = time.monotonic()
        self.send("shutdown", None, {"op": "shutdown"})
        self.wq.put(None)  # then EOF
        try:
            # keep sampling while accepted calls finish
            while True:
                try:
                    self.host.wait(1.0)
                    break
                except subprocess.TimeoutExpired:
                    self.sample(time.monotonic() - self.t_launch)
                if time.monotonic() - self.t_shutdown > a.shutdown_timeout:
                    self.failures.append(
                        "the host did not exit within %d s of shutdown"
                        % a.shutdown_timeout)
                    self.host.kill()
                    self.host.wait()
                    break
        finally:
            pass
        self.exit_s = time.monotonic() - self.t_shutdown
        self.stdout_eof.wait(10)
        return self.finish(started=True)

    # -- judging
    def finish(self, started):
        a = self.a
        rc = self.host.wait()
        self.log.close()
        self.load_end = loadavg()
        # leftovers: everything we saw under the host, and anything with
        # its cwd in the run directory, polled for up to leftover_wait s
        t0 = time.monotonic()
        while True:
            left = {k: v for k, v in self.seen_procs.items() if alive(k)}
            left.update(under_dir(a.config))
            if not left or time.monotonic() - t0 >= a.leftover_wait:
                break
            time.sleep(0.1)
        cg = cgroups_left(self.host.pid)
        left_desc = ["%d %s (%s)" % (k[0], v, cmdline(k[0]))
                     for k, v in sorted(left.items())]
        for k in left:  # ours (started under our host): do not leave them
            try:
                os.kill(k[0], signal.SIGKILL)
            except OSError:
                pass
        if not started:
            self.print_failure(rc, left_desc)
            return 1
        return self.report(rc, left_desc, cg)

    def print_failure(self, rc, left_desc):
        print("hostile-soak: FAILED before the soak began (host status %s)"
              % rc)
        for f in self.failures:
            print("  - " + f)
        for d in left_desc:
            print("  - left running: " + d)
        try:
            with open(os.path.join(self.a.out, "host.log"), "rb") as f:
                tail = f.read()[-3000:].decode("utf-8", "replace")
            print("host.log (tail):\n" + tail)
        except OSError:
            pass

    def report(self, rc, left_desc, cg):
        a = self.a
        t_ready = self.t_ready - self.t_launch
        t_end = self.t_end - self.t_launch
        soak = [s for s in self.samples if t_ready <= s[0] <= t_end + 0.01]
        startup_peak = max((s[1] for s in self.samples if s[0] < t_ready),
                           default=0)
        lines = []
        ok = True

        def check(cond, what):
            nonlocal ok
            if not cond:
                ok = False
                self.failures.append(what)
            return "ok" if cond else "**FAIL**"

        rss = [s[1] for s in soak]
        thr = [s[2] for s in soak]
        fds = [s[3] for s in soak]
        n = len(soak)
        q = max(1, n // 4)
        q1, q4 = soak[:q], soak[-q:]
        q1m = statistics.median(s[1] for s in q1)
        q4m = statistics.median(s[1] for s in q4)
        dt_min = ((statistics.mean(s[0] for s in q4) -
                   statistics.mean(s[0] for s in q1)) / 60.0) or 1.0
        growth = q4m - q1m
        limit = q1m * a.rss_pct / 100.0 + a.rss_mib * 1024.0
        fd_steady = int(statistics.median(fds))
        thr_steady = int(statistics.median(thr))
        tail = soak[-5:]
        fd_final = min(s[3] for s in tail)
        thr_final = min(s[2] for s in tail)
        cpu_s = (soak[-1][5] - soak[0][5]) / CLK_TCK
        wall = soak[-1][0] - soak[0][0] or 1.0
        loads = [s[6] for s in self.samples]

        # calls
        tot = {"succeeded": 0, "failed": 0, "unknown": 0, "other": 0}
        rows = []
        app_ok = True
        for x in self.apps:
            st = x["status"]
            s_, f_, u_ = (st.get("succeeded", 0), st.get("failed", 0),
                          st.get("unknown", 0))
            other = sum(v for k, v in st.items()
                        if k not in ("succeeded", "failed", "unknown"))
            tot["succeeded"] += s_
            tot["failed"] += f_
            tot["unknown"] += u_
            tot["other"] += other
            answered = s_ + f_ + u_ + other
            if x["expect"] == "crash":
                # the calls already written when it died are unknown
                good = u_ <= a.inflight and s_ == 0 and other == 0
            else:
                good = answered > 0 and s_ == answered
            app_ok &= good
            lat = x["lat"]
            note = x["state"]
            if x["ext"]:
                we = x["ext"]
                note += "; events received %d, committed %d" % (
                    we.get("received", 0), we.get("committed", 0))
                note += "".join(", %s %d" % (k, we[k]) for k in (
                    "queued", "duplicates", "rejected", "dropped_inactive")
                    if isinstance(we.get(k), int) and we[k])
            if other:
                note += "; " + ", ".join("%s %d" % (k, v) for k, v in
                                         sorted(st.items()) if k.startswith(
                                             "error:"))
            rows.append("| %s | %s | %d | %d | %d | %d | %.0f | %.0f | %s%s |"
                        % (x["name"], x["what"], answered, s_, f_, u_,
                           pct(lat, 50) * 1000, pct(lat, 99) * 1000, note,
                           "" if good else " **unexpected**"))
        sent = self.next_id - 1
        unanswered = len(self.pending)

        lines.append("Hostile soak: %d Apps against one `aurora-mcp serve`, "
                     "%.0f s of calls (%.1f s startup), %d calls/s per App "
                     "at most %d in flight, status every %g s."
                     % (len(self.apps), t_end - t_ready, t_ready, a.rate,
                        a.inflight, a.status_every))
        lines.append("Machine: %d CPUs, load average %.1f at start, %.1f "
                     "median, %.1f at end; the host used %.0f%% of one CPU."
                     % (os.cpu_count(), self.load_start,
                        statistics.median(loads) if loads else float("nan"),
                        self.load_end, 100.0 * cpu_s / wall))
        lines.append("")
        lines.append("| App | hostile behaviour | calls | succeeded | failed "
                     "| unknown | p50 ms | p99 ms | state at end |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
        lines.extend(rows)
        lines.append("| **all** | | %d | %d | %d | %d | | | %s |"
                     % (sum(tot.values()), tot["succeeded"], tot["failed"],
                        tot["unknown"],
                        "other answers: %d" % tot["other"] if tot["other"]
                        else "outcomes as expected" if app_ok
                        else "**unexpected outcomes**"))
        check(app_ok, "a call outcome was not what the App's behaviour "
                      "allows (see **unexpected**)")
        lines.append("")
        lines.append("| host measure | value | check |")
        lines.append("|---|---|---|")
        lines.append("| RSS (MiB) first / median / max | %.1f / %.1f / %.1f "
                     "(startup peak %.1f, 1 s samples) | |"
                     % (mib(rss[0]), mib(statistics.median(rss)),
                        mib(max(rss)), mib(startup_peak)))
        lines.append("| RSS first quarter -> last quarter (medians) | "
                     "%.1f -> %.1f MiB: %+.2f MiB, %+.3f MiB/min "
                     "(limit %+.1f MiB = %g%% + %g MiB) | %s |"
                     % (mib(q1m), mib(q4m), mib(growth), mib(growth) / dt_min,
                        mib(limit), a.rss_pct, a.rss_mib,
                        check(growth <= limit, "RSS grew %.1f MiB between "
                              "the first and last quarter (limit %.1f MiB)"
                              % (mib(growth), mib(limit)))))
        lines.append("| open fds: steady (median) / max / final | %d / %d / "
                     "%d | %s |" % (fd_steady, max(fds), fd_final,
                                    check(fd_final <= fd_steady,
                                          "fds at the end (%d) exceed the "
                                          "steady value (%d)"
                                          % (fd_final, fd_steady))))
        lines.append("| threads: steady (median) / max / final | %d / %d / "
                     "%d | %s |" % (thr_steady, max(thr), thr_final,
                                    check(thr_final <= thr_steady,
                                          "threads at the end (%d) exceed "
                                          "the steady value (%d)"
                                          % (thr_final, thr_steady))))
        lines.append("| requests sent / answered / unanswered | %d / %d / "
                     "%d (%d status answers) | %s |"
                     % (sent, self.answers, unanswered, self.status_answers,
                        check(unanswered == 0 and self.bad_lines == 0 and
                              self.dup_or_unknown_ids == 0,
                              "%d requests got no answer, %d lines were not "
                              "JSON objects, %d answers had an unknown or "
                              "repeated id" % (unanswered, self.bad_lines,
                                               self.dup_or_unknown_ids))))
        crashed = rc < 0 or (rc != 0)
        lines.append("| host exit (after shutdown) | %s in %.1f s | %s |"
                     % ("signal %d" % -rc if rc < 0 else "status %d" % rc,
                        self.exit_s,
                        check(not crashed and self.shutdown_answer is not None
                              and "result" in self.shutdown_answer,
                              "the host ended with %s (shutdown answer: %s)"
                              % ("signal %d" % -rc if rc < 0 else
                                 "status %d" % rc,
                                 json.dumps(self.shutdown_answer)))))
        nprocs = len(self.seen_procs)
        lines.append("| App processes left after exit | %d of %d seen "
                     "(supervisors, wrappers, servers); cgroups left %d "
                     "| %s |"
                     % (len(left_desc), nprocs, len(cg),
                        check(not left_desc, "%d App processes survived the "
                              "host: %s" % (len(left_desc),
                                            "; ".join(left_desc)))))
        lines.append("")
        marks = [soak[min(n - 1, int(i * (n - 1) / 10))] for i in range(11)]
        lines.append("Over time (every 10%% of the soak, %d samples): "
                     % n)
        lines.append("")
        lines.append("    RSS MiB  " + " ".join("%5.1f" % mib(s[1])
                                               for s in marks))
        lines.append("     anon    " + " ".join("%5.1f" % mib(s[8])
                                               for s in marks))
        lines.append("     file+shm" + " ".join("%5.1f" % mib(s[9] + s[10])
                                               for s in marks))
        lines.append("    fds      " + " ".join("%5d" % s[3] for s in marks))
        lines.append("    threads  " + " ".join("%5d" % s[2] for s in marks))
        lines.append("    App procs" + " ".join("%5d" % s[4] for s in marks))
        if any(s[7] for s in soak):
            lines.append("    (zombies)" + " ".join("%5d" % s[7]
                                                  for s in marks))
        lines.append("")
        for f in self.failures:
            lines.append("FAILED: " + f)
        lines.append("hostile-soak: %s" % ("passed" if ok and not
                                           self.failures else "FAILED"))
        text = "\n".join(lines)
        print(text)
        with open(os.path.join(a.out, "summary.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(a.out, "samples.csv"), "w") as f:
            f.write("t_s,phase,rss_kib,threads,fds,app_procs,cpu_ticks,"
                    "load1,zombies,rss_anon_kib,rss_file_kib,"
                    "rss_shmem_kib\n")
            for s in self.samples:
                phase = ("startup" if s[0] < t_ready else
                         "soak" if s[0] <= t_end + 0.01 else "shutdown")
                f.write("%.2f,%s,%d,%d,%d,%d,%d,%.2f,%d,%d,%d,%d\n"
                        % (s[0], phase, s[1], s[2], s[3], s[4], s[5], s[6],
                           s[7], s[8], s[9], s[10]))
        with open(os.path.join(a.out, "calls.csv"), "w") as f:
            f.write("app,package,sent,outcome,count\n")
            for x in self.apps:
                for k, v in sorted(x["status"].items()):
                    f.write("%s,%s,%d,%s,%d\n" % (x["name"], x["pkg"],
                                                  x["sent"], k, v))
        return 0 if ok and not self.failures else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--aurora", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--rate", type=float, default=10)
    p.add_argument("--inflight", type=int, default=2)
    p.add_argument("--status-every", type=float, default=5)
    p.add_argument("--rss-pct", type=float, default=10)
    p.add_argument("--rss-mib", type=float, default=8)
    p.add_argument("--startup-timeout", type=float, default=180)
    p.add_argument("--shutdown-timeout", type=float, default=120)
    p.add_argument("--leftover-wait", type=float, default=5)
    a = p.parse_args()
    a.config = os.path.realpath(a.config)
    sys.exit(Soak(a).run())


if __name__ == "__main__":
    main()
