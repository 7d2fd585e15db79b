"""Host: one aurora MCP host in this process, on libaurora-mcp's C API.

Threads: create, add_builtin, start and close belong to the thread that
made the Host; once started, call, tools, status and restart_required
may be used from any number of threads at once (the C calls run without
the GIL).
"""
import ctypes
import json
import math
import queue
import re
import threading
from ctypes import byref, c_char, c_size_t, c_void_p, POINTER
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterator, List, Mapping, Optional,
                    Sequence, Union)

from . import _lib

_LIB: Optional[ctypes.CDLL] = None
_LIB_LOCK = threading.Lock()

SUCCEEDED, FAILED, UNKNOWN = "succeeded", "failed", "unknown"
_STATUS = {0: SUCCEEDED, 1: FAILED, 2: UNKNOWN}
_STATUS_CODE = {v: k for k, v in _STATUS.items()}
# "apps.d/demo.ini:7: timeout_secnds: unknown key ..." (docs/embedding.md)
_WHERE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+): (?P<key>[^:\s]+): ")


def library() -> ctypes.CDLL:
    """libaurora-mcp, loaded once (see _lib.load for where it is looked
    for)."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            _LIB = _lib.load()
        return _LIB


def version() -> str:
    """The version of the loaded library."""
    return library().aur_version().decode()


class AuroraError(Exception):
    """A call of the C API failed: rc is its enum aur_rc value, code its
    stable word ("config_invalid", "timeout", ...)."""

    def __init__(self, rc: int, message: str, code: Optional[str] = None):
        self.rc = rc
        self.code = code or library().aur_rc_word(rc).decode()
        self.message = message
        super().__init__(f"{self.code}: {message}" if message else self.code)


class StartupError(AuroraError):
    """The host could not be created or started.  app is the package of
    the App concerned (None: none); phase is where it failed (config,
    connect, catalog/listen, tools/list, catalog/freeze, agents,
    activate); file, line and key locate a configuration error."""

    def __init__(self, rc: int, serr: _lib.AurStartupError):
        code = serr.code.decode(errors="replace") or None
        message = serr.message.decode(errors="replace")
        super().__init__(rc, message, code)
        self.app = serr.app.decode(errors="replace") or None
        self.phase = serr.phase.decode(errors="replace") or None
        m = _WHERE.match(message)
        self.file = m.group("file") if m else None
        self.line = int(m.group("line")) if m else None
        self.key = m.group("key") if m else None


class ConfigError(StartupError):
    """The configuration (a file, a plugin, the plugin set) is invalid."""


class ToolFailed(Exception):
    """Raised by a builtin tool: it did nothing, and says why.  The call
    ends failed with this text.  Any other exception ends it unknown."""


@dataclass(frozen=True)
class Tool:
    """One frozen tool: what an LLM needs to call it, and its scopes."""
    id: str
    app: str
    raw_name: str
    description: str
    input_schema: Dict[str, Any]
    observe: List[str] = field(default_factory=list)
    publish: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class CallResult:
    """A call's outcome.  status is "succeeded" (the server confirmed a
    result), "failed" (refused, or provably not sent: retrying is safe) or
    "unknown" (it may have run: never retry blindly)."""
    status: str
    data: bytes
    observe: Optional[List[str]]
    publish: Optional[List[str]]

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED

    @property
    def failed(self) -> bool:
        return self.status == FAILED

    @property
    def unknown(self) -> bool:
        return self.status == UNKNOWN


def _json_text(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode()


def _strings(v, n) -> Optional[List[str]]:
    if not v:
        return None
    return [v[i].decode(errors="replace") for i in range(n)]


def _call_args(arguments, timeout):
    """The arguments as JSON text (None: {}) and the timeout in ms (-1:
    the App's); ValueError for what cannot be sent."""
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ValueError("tool arguments must be a mapping")
    if timeout is not None and not (timeout >= 0 and math.isfinite(timeout)):
        raise ValueError("timeout must be a finite number >= 0")
    args = _json_text(arguments) if arguments is not None else None
    return args, -1 if timeout is None else int(timeout * 1000)


def _result(out: _lib.AurToolOutput) -> "CallResult":
    data = ctypes.string_at(out.content, out.content_len) \
        if out.content else b""
    return CallResult(_STATUS.get(out.status, UNKNOWN), data,
                      _strings(out.observe, out.n_observe),
                      _strings(out.publish, out.n_publish))


def _raise(rc: int, err: _lib.AurError) -> None:
    if rc != 0:
        raise AuroraError(rc, err.msg.decode(errors="replace"))


BuiltinFn = Callable[[Dict[str, Any]], Union[str, Mapping[str, Any],
                                             Sequence[Any]]]


class Host:
    """An aurora MCP host on a configuration directory.

    >>> with Host("examples/demo") as host:
    ...     out = host.call("aur.mcp.org.aurora.demo.add", {"a": 2, "b": 40})
    """

    def __init__(self, config_dir: str, *, plugin_dir: Optional[str] = None,
                 only: Optional[Sequence[str]] = None,
                 disable: Sequence[str] = (), start: bool = True,
                 log: Optional[Callable[[int, str], None]] = None,
                 verbosity: int = 0):
        """Load and check config_dir and its plugins, leave out the Apps
        not in only (when given) and those in disable, and start (unless
        start is False: add builtins first, then call start()).

        log(level, line) receives this host's log lines instead of stderr
        (level 0 error .. 3 debug; it runs on the host's threads and must
        not call into the host); verbosity shifts host.ini's log_level by
        that many levels (+1: more)."""
        self._lib = library()
        self._h = c_void_p()
        self._builtins: List[Any] = []  # the C callbacks must outlive h
        self._log_cb: Any = None
        self._tools: Optional[List[Tool]] = None
        serr = _lib.startup_error()
        err = _lib.AurError()
        rc = self._lib.aur_mcp_create(
            config_dir.encode(), plugin_dir.encode() if plugin_dir else None,
            byref(self._h), byref(serr), byref(err))
        if rc != 0:
            raise (ConfigError if serr.code == b"config_invalid"
                   else StartupError)(rc, serr)
        try:
            if log is not None:
                def sink(_ud, level, line, n):
                    try:
                        log(level, ctypes.string_at(line, n).decode(
                            errors="replace"))
                    except BaseException:  # never into the host's thread
                        pass
                self._log_cb = _lib.LOG_FN(sink)
                self._lib.aur_mcp_set_log(self._h, self._log_cb, None)
            if verbosity:
                self._lib.aur_mcp_log_verbosity(self._h, int(verbosity))
            for pkg in self._skipped(only, disable):
                _raise(self._lib.aur_mcp_skip_app(self._h, pkg.encode(), 1,
                                                  byref(err)), err)
            if start:
                self.start()
        except BaseException:
            self.close()
            raise

    def _skipped(self, only, disable) -> List[str]:
        skip = list(disable)
        if only is not None:
            err = _lib.AurError()
            for pkg in only:  # an unknown package is an error, as in the CLI
                _raise(self._lib.aur_mcp_skip_app(self._h, pkg.encode(), 0,
                                                  byref(err)), err)
            skip += [a["package"] for a in self.status().get("apps", [])
                     if a.get("package") not in only]
        return skip

    def add_builtin(self, tool_id: str, fn: BuiltinFn, *,
                    description: str = "",
                    input_schema: Optional[Mapping[str, Any]] = None) -> None:
        """Add a tool of this runtime (id "aur.<a>.<b>...") before start.
        fn(arguments) returns its text (a str, or JSON-able data); raising
        ToolFailed ends the call failed, any other exception unknown."""
        schema = _json_text(input_schema) if input_schema is not None else None

        def run(_ud, args, n, reply):
            try:
                out = fn(json.loads(ctypes.string_at(args, n)))
                text = out.encode() if isinstance(out, str) else \
                    _json_text(out)
                status = 0
            except ToolFailed as e:
                text, status = str(e).encode(), 1
            except BaseException as e:  # it ran: its effect is unknown
                text = f"{type(e).__name__}: {e}".encode()
                status = 2
            self._lib.aur_builtin_reply_set(reply, status, text, len(text))

        cb = _lib.BUILTIN_FN(run)
        err = _lib.AurError()
        rc = self._lib.aur_mcp_add_builtin(
            self._h, tool_id.encode(), description.encode(), schema,
            len(schema) if schema else 0, cb, None, byref(err))
        _raise(rc, err)
        self._builtins.append(cb)

    def start(self) -> None:
        """Start every App under its deadline and freeze the registry."""
        serr = _lib.startup_error()
        err = _lib.AurError()
        rc = self._lib.aur_mcp_start(self._h, byref(serr), byref(err))
        if rc != 0:
            raise StartupError(rc, serr)

    @property
    def tools(self) -> List[Tool]:
        """The frozen registry, sorted by id."""
        if self._tools is None:
            n = self._lib.aur_mcp_tool_count(self._h)
            tools = []
            for i in range(n):
                ln = c_size_t()
                p = self._lib.aur_mcp_tool_json(self._h, i, byref(ln))
                if not p:
                    raise MemoryError("aur_mcp_tool_json")
                d = json.loads(ctypes.string_at(p, ln.value))
                tools.append(Tool(**d))
            self._tools = tools
        return self._tools

    def call(self, tool_id: str, arguments: Optional[Mapping[str, Any]] = None,
             *, timeout: Optional[float] = None) -> CallResult:
        """Call a tool and wait for its outcome (timeout in seconds; None:
        the App's own).  Never retried.  Raises ValueError for arguments
        that are not a JSON object; every other problem is an outcome."""
        args, ms = _call_args(arguments, timeout)
        out = _lib.tool_output()
        rc = self._lib.aur_mcp_call(self._h, tool_id.encode(), args,
                                    len(args) if args else 0, ms, byref(out))
        try:
            result = _result(out)
        finally:
            self._lib.aur_tool_output_clear(byref(out))
        # AUR_E_NOMEM still comes with a truthful outcome (failed only if
        # nothing was sent): an outcome like any other problem.
        if rc == _lib.AUR_E_INVAL:
            raise ValueError(result.text)
        return result

    def status(self, with_tools: bool = False) -> Dict[str, Any]:
        """The status document: per App its state and negotiated_version,
        restart_required, and with_tools the catalog."""
        text = POINTER(c_char)()
        n = c_size_t()
        err = _lib.AurError()
        _raise(self._lib.aur_mcp_status(self._h, int(with_tools),
                                        byref(text), byref(n), byref(err)),
               err)
        try:
            return json.loads(ctypes.string_at(text, n.value))
        finally:
            self._lib.aur_free(text)

    @property
    def restart_required(self) -> bool:
        """An App's tools changed after the freeze: restart to see them."""
        return bool(self._lib.aur_mcp_restart_required(self._h))

    def cancel(self) -> None:
        """From any thread: a running start fails, calls in flight end
        unknown, later calls fail unsent."""
        if self._h:
            self._lib.aur_mcp_cancel(self._h)

    def close(self) -> None:
        """Shut every App down and free the host.  Idempotent."""
        if self._h:
            self._lib.aur_mcp_destroy(self._h)
            self._h = c_void_p()

    def __enter__(self) -> "Host":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def journal(config_dir: str, after: int = 0,
            scope: Optional[str] = None) -> Iterator[Dict[str, Any]]:
    """The world journal's commits (business events and lifecycle rows)
    after sequence number after, optionally of one scope, oldest first."""
    lines: List[bytes] = []
    cb = _lib.LINE_FN(lambda _ud, line: lines.append(line))
    err = _lib.AurError()
    lib = library()
    rc = lib.aur_journal_dump(config_dir.encode(), after,
                              scope.encode() if scope else None, cb, None,
                              byref(err))
    _raise(rc, err)
    for line in lines:
        yield json.loads(line)


class JournalFollower:
    """Commits as they are committed (`aurora-mcp journal --follow`), by
    this host or any other sharing the journal: iterate to get each commit
    dict in seq order, blocking until one comes; close() (or leaving a
    `with` block) stops within about idle seconds.  The C follow runs on a
    thread of its own and hands commits over a bounded queue, so a slow
    consumer slows the reader rather than growing memory."""

    def __init__(self, config_dir: str, after: int = 0,
                 scope: Optional[str] = None, idle: float = 0.2,
                 queue_size: int = 1024) -> None:
        self._q: "queue.Queue[Any]" = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._done = object()
        lib = library()

        def on_line(_ud: Any, line: Optional[bytes]) -> int:
            while line is not None and not self._stop.is_set():
                try:
                    self._q.put(line, timeout=idle)
                    break
                except queue.Full:
                    continue
            return 1 if self._stop.is_set() else 0

        self._cb = _lib.FOLLOW_FN(on_line)  # kept alive with the thread

        def run() -> None:
            err = _lib.AurError()
            rc = lib.aur_journal_follow(config_dir.encode(), after,
                                        scope.encode() if scope else None,
                                        max(1, int(idle * 1000)), self._cb,
                                        None, byref(err))
            try:
                _raise(rc, err)
                outcome: Any = self._done
            except Exception as e:  # handed to the consumer
                outcome = e
            while True:  # the consumer may have stopped reading
                try:
                    self._q.put(outcome, timeout=idle)
                    return
                except queue.Full:
                    if self._stop.is_set():
                        return

        self._thread = threading.Thread(target=run, daemon=True,
                                        name="aurora-mcp-journal-follow")
        self._thread.start()

    def __iter__(self) -> "JournalFollower":
        return self

    def __next__(self) -> Dict[str, Any]:
        if self._stop.is_set() and self._q.empty():
            raise StopIteration
        item = self._q.get()
        if item is self._done:
            self._stop.set()
            raise StopIteration
        if isinstance(item, Exception):
            self._stop.set()
            raise item
        return json.loads(item)

    def close(self) -> None:
        """Stop following and wait for the reader thread to end."""
        self._stop.set()
        while self._thread.is_alive():
            try:  # make room for a reader blocked on a full queue
                while True:
                    self._q.get_nowait()
            except Exception:
                pass
            self._thread.join(timeout=0.05)

    def __enter__(self) -> "JournalFollower":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def follow_journal(config_dir: str, after: int = 0,
                   scope: Optional[str] = None,
                   idle: float = 0.2) -> JournalFollower:
    """Follow the world journal from sequence number after (optionally one
    scope): a JournalFollower, an iterator to close when done."""
    return JournalFollower(config_dir, after, scope, idle)
