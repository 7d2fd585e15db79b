"""AsyncHost: the host for asyncio programs.

Calls go through aur_mcp_call_async: the host runs them on its own call
threads and hands each outcome to the event loop, so a thousand awaiting
coroutines need no thread each.  Start and close, which block, run in
the loop's default executor.
"""
import asyncio
import ctypes
import itertools
import threading
from ctypes import byref
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _lib
from .host import (AuroraError, CallResult, Host, Tool, _call_args, _result)


class AsyncHost:
    """>>> async with AsyncHost("examples/demo") as host:
    ...     outs = await asyncio.gather(*(host.call(t, {}) for t in ids))

    Takes Host's keyword arguments.  Cancelling an awaiting call does not
    cancel the call: it may still happen, and its outcome is dropped."""

    def __init__(self, config_dir: str, **kwargs: Any):
        self._config_dir = config_dir
        self._kwargs = kwargs
        self._host: Optional[Host] = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: Dict[int, Tuple[asyncio.AbstractEventLoop,
                                       asyncio.Future]] = {}
        self._done_cb = _lib.DONE_FN(self._done)
        # Outcomes waiting for their loop, per loop: one wake-up carries
        # all that arrived meanwhile.
        self._ready: Dict[asyncio.AbstractEventLoop,
                          List[Tuple[asyncio.Future, CallResult]]] = {}

    async def __aenter__(self) -> "AsyncHost":
        loop = asyncio.get_running_loop()
        self._host = await loop.run_in_executor(
            None, lambda: Host(self._config_dir, **self._kwargs))
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Shut down; every call still awaited ends first (queued ones
        failed, never sent; running ones as shutdown makes them)."""
        if self._host is not None:
            host, self._host = self._host, None
            await asyncio.get_running_loop().run_in_executor(None, host.close)

    def _running(self) -> Host:
        if self._host is None:
            raise AuroraError(-18, "host is not running")  # AUR_E_STATE
        return self._host

    @property
    def tools(self) -> List[Tool]:
        return self._running().tools

    def status(self, with_tools: bool = False) -> Dict[str, Any]:
        return self._running().status(with_tools)

    @property
    def restart_required(self) -> bool:
        return self._running().restart_required

    def _done(self, ud, out) -> None:
        """On a host thread: queue the outcome for the caller's loop,
        waking the loop only when its queue was empty."""
        result = _result(out.contents)
        with self._lock:
            loop, fut = self._pending.pop(ud or 0, (None, None))
            if fut is None:
                return
            queue = self._ready.setdefault(loop, [])
            queue.append((fut, result))
            wake = len(queue) == 1
        if wake:
            try:
                loop.call_soon_threadsafe(self._deliver, loop)
            except RuntimeError:  # that loop is closed: nobody awaits it
                with self._lock:
                    self._ready.pop(loop, None)

    def _deliver(self, loop) -> None:
        """On the loop: hand every queued outcome to its future."""
        with self._lock:
            ready = self._ready.pop(loop, [])
        for fut, result in ready:
            if not fut.done():  # a cancelled await: the outcome is dropped
                fut.set_result(result)

    async def call(self, tool_id: str,
                   arguments: Optional[Mapping[str, Any]] = None, *,
                   timeout: Optional[float] = None) -> CallResult:
        """Host.call, awaited.  Raises ValueError for arguments that
        cannot be sent, AuroraError when the host refuses the call (not
        running, queue full); nothing is sent then."""
        host = self._running()
        args, ms = _call_args(arguments, timeout)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        key = next(self._ids)
        with self._lock:
            self._pending[key] = (loop, fut)
        err = _lib.AurError()
        rc = host._lib.aur_mcp_call_async(
            host._h, tool_id.encode(), args, len(args) if args else 0, ms,
            self._done_cb, ctypes.c_void_p(key), byref(err))
        if rc != 0:
            with self._lock:
                self._pending.pop(key, None)
            msg = err.msg.decode(errors="replace")
            raise ValueError(msg) if rc == _lib.AUR_E_INVAL else \
                AuroraError(rc, msg)
        return await fut
