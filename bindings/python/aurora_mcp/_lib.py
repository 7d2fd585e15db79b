"""libaurora-mcp through ctypes: finding the library and the C signatures.

Only aur_host.h is used: JSON crosses as text with explicit lengths, so
nothing here knows json-c.  ctypes releases the GIL for the length of
every foreign call, so calls from several Python threads run at once.
"""
import ctypes
import ctypes.util
import os
import shutil
import subprocess
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int,
                    c_int32, c_int64, c_size_t, c_uint32, c_void_p)
from typing import List, Optional

SONAME = "libaurora-mcp.so.1"
ERR_MSG_SIZE = 256
AUR_E_INVAL = -1  # enum aur_rc (aur_plugin.h)


class AurError(Structure):
    _fields_ = [("code", c_int32), ("detail", c_int32),
                ("reserved", c_uint32 * 2), ("msg", c_char * ERR_MSG_SIZE)]


class AurStartupError(Structure):
    _fields_ = [("struct_size", c_uint32), ("rc", c_int32),
                ("phase_id", c_int32),
                ("code", c_char * 48), ("app", c_char * 160),
                ("phase", c_char * 32), ("message", c_char * 512)]


class AurToolOutput(Structure):
    _fields_ = [("struct_size", c_uint32),
                ("status", c_int), ("content", POINTER(c_char)),
                ("observe", POINTER(c_char_p)),
                ("publish", POINTER(c_char_p)),
                ("n_observe", c_size_t), ("n_publish", c_size_t),
                ("owned", c_void_p), ("content_len", c_size_t)]


# void aur_builtin_fn(void *ud, const char *args, size_t len,
#                     struct aur_builtin_reply *reply)
BUILTIN_FN = CFUNCTYPE(None, c_void_p, POINTER(c_char), c_size_t, c_void_p)
# void (*emit)(void *ud, const char *line)
LINE_FN = CFUNCTYPE(None, c_void_p, c_char_p)
FOLLOW_FN = CFUNCTYPE(c_int, c_void_p, c_char_p)
# void aur_call_done_fn(void *ud, const struct aur_tool_output *out)
DONE_FN = CFUNCTYPE(None, c_void_p, POINTER(AurToolOutput))
# void aur_log_fn(void *ud, int level, const char *line, size_t len)
LOG_FN = CFUNCTYPE(None, c_void_p, c_int, POINTER(c_char), c_size_t)


def _candidates() -> List[str]:
    """Where the library may be, most specific first."""
    found = []
    env = os.environ.get("AURORA_MCP_LIB")
    if env:
        found.append(env)
    cli = shutil.which("aurora-mcp")
    if cli:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(cli)))
        for sub in ("lib", "lib64"):
            found.append(os.path.join(prefix, sub, SONAME))
        multiarch = os.path.join(prefix, "lib")
        if os.path.isdir(multiarch):
            for d in sorted(os.listdir(multiarch)):
                if d.endswith("-linux-gnu"):
                    found.append(os.path.join(multiarch, d, SONAME))
    try:
        libdir = subprocess.run(
            ["pkg-config", "--variable=libdir", "aurora-mcp"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip()
        if libdir:
            found.append(os.path.join(libdir, SONAME))
    except (OSError, subprocess.SubprocessError):
        pass
    system = ctypes.util.find_library("aurora-mcp")
    if system:
        found.append(system)
    return found


def load(path: Optional[str] = None) -> ctypes.CDLL:
    """The library at path, or the first one found (AURORA_MCP_LIB, next
    to an aurora-mcp on PATH, pkg-config, the system's)."""
    tried = []
    for p in [path] if path else _candidates():
        if os.sep in p and not os.path.exists(p):
            tried.append(p)
            continue
        try:
            return _declare(ctypes.CDLL(p))
        except OSError as e:
            tried.append(f"{p} ({e})")
    raise OSError("libaurora-mcp not found; set AURORA_MCP_LIB to its path "
                  "(tried: " + (", ".join(tried) or "nothing") + ")")


def _fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


def startup_error() -> AurStartupError:
    e = AurStartupError()
    e.struct_size = ctypes.sizeof(e)
    return e


def tool_output() -> AurToolOutput:
    o = AurToolOutput()
    o.struct_size = ctypes.sizeof(o)
    return o


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    P = c_void_p
    E = POINTER(AurError)
    S = POINTER(AurStartupError)
    _fn(lib, "aur_version", c_char_p)
    _fn(lib, "aur_rc_word", c_char_p, c_int)
    _fn(lib, "aur_strerror", c_char_p, c_int)
    _fn(lib, "aur_free", None, P)
    _fn(lib, "aur_call_status_word", c_char_p, c_int)
    _fn(lib, "aur_mcp_create", c_int, c_char_p, c_char_p, POINTER(P), S, E)
    _fn(lib, "aur_mcp_skip_app", c_int, P, c_char_p, c_int, E)
    _fn(lib, "aur_mcp_set_log", None, P, LOG_FN, P)
    _fn(lib, "aur_mcp_log_verbosity", None, P, c_int)
    _fn(lib, "aur_mcp_add_builtin", c_int, P, c_char_p, c_char_p,
        c_char_p, c_size_t, BUILTIN_FN, P, E)
    _fn(lib, "aur_builtin_reply_set", c_int, P, c_int, c_char_p, c_size_t)
    _fn(lib, "aur_mcp_start", c_int, P, S, E)
    _fn(lib, "aur_mcp_tool_count", c_size_t, P)
    _fn(lib, "aur_mcp_tool_json", POINTER(c_char), P, c_size_t,
        POINTER(c_size_t))
    _fn(lib, "aur_mcp_call", c_int, P, c_char_p, c_char_p, c_size_t,
        c_int64, POINTER(AurToolOutput))
    _fn(lib, "aur_tool_output_clear", None, POINTER(AurToolOutput))
    _fn(lib, "aur_mcp_call_async", c_int, P, c_char_p, c_char_p, c_size_t,
        c_int64, DONE_FN, P, E)
    _fn(lib, "aur_mcp_status", c_int, P, c_int, POINTER(POINTER(c_char)),
        POINTER(c_size_t), E)
    _fn(lib, "aur_mcp_restart_required", c_int, P)
    _fn(lib, "aur_mcp_cancel", None, P)
    _fn(lib, "aur_mcp_shutdown", None, P)
    _fn(lib, "aur_mcp_destroy", None, P)
    _fn(lib, "aur_journal_dump", c_int, c_char_p, c_int64, c_char_p,
        LINE_FN, P, E)
    _fn(lib, "aur_journal_follow", c_int, c_char_p, c_int64, c_char_p,
        c_int, FOLLOW_FN, P, E)
    return lib
