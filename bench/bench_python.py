"""aurora_mcp from Python: N calls of one tool, sequentially (sync Host)
or with K awaited at once (AsyncHost).  Prints one JSON line like
bench_host's: {"client":..,"calls":N,"failed":F,"start_ms":..,
"call_ms":..,"cpu_ms":..}; cpu_ms is this process's (the interpreter and
the library together).  Not a test: bench/python.sh runs it.

usage: bench_python.py -c DIR -t TOOL [-n N] [-k K] [--async]
"""
import argparse
import asyncio
import json
import resource
import time

from aurora_mcp import AsyncHost, Host


def cpu_ms():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000.0


def run_sync(a):
    t0 = time.monotonic()
    with Host(a.c) as host:
        t1 = time.monotonic()
        c0 = cpu_ms()
        failed = sum(not host.call(a.t, {"text": "x"}).succeeded
                     for _ in range(a.n))
        t2 = time.monotonic()
        c1 = cpu_ms()
    return "python-sync", failed, t1 - t0, t2 - t1, c1 - c0


async def run_async(a):
    t0 = time.monotonic()
    async with AsyncHost(a.c) as host:
        t1 = time.monotonic()
        c0 = cpu_ms()
        sem = asyncio.Semaphore(a.k)

        async def one():
            async with sem:
                return (await host.call(a.t, {"text": "x"})).succeeded
        oks = await asyncio.gather(*(one() for _ in range(a.n)))
        t2 = time.monotonic()
        c1 = cpu_ms()
    return f"python-async-k{a.k}", oks.count(False), t1 - t0, t2 - t1, c1 - c0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-c", required=True)
    p.add_argument("-t", required=True)
    p.add_argument("-n", type=int, default=2000)
    p.add_argument("-k", type=int, default=16)
    p.add_argument("--async", dest="use_async", action="store_true")
    a = p.parse_args()
    client, failed, start, calls, cpu = (asyncio.run(run_async(a))
                                         if a.use_async else run_sync(a))
    print(json.dumps({"client": client, "calls": a.n, "failed": failed,
                      "start_ms": round(start * 1000, 2),
                      "call_ms": round(calls * 1000, 2),
                      "cpu_ms": round(cpu, 2)}))


if __name__ == "__main__":
    main()
