"""aurora_mcp.AsyncHost: many calls awaited at once on one event loop."""
import asyncio
import json

import pytest

from aurora_mcp import AsyncHost, AuroraError

from conftest import write_fixture_app

ADD = "aur.mcp.org.aurora.demo.add"


def test_a_hundred_calls_at_once(demo):
    async def main():
        async with AsyncHost(demo) as host:
            assert ADD in [t.id for t in host.tools]
            outs = await asyncio.gather(
                *(host.call(ADD, {"a": i, "b": 1000}) for i in range(100)))
            assert host.status()["apps"][0]["state"] == "ready"
            return outs
    outs = asyncio.run(main())
    assert [json.loads(o.text)["sum"] for o in outs] == \
        [i + 1000 for i in range(100)]
    assert all(o.succeeded for o in outs)


def test_unusable_arguments_raise_before_sending(demo):
    async def main():
        async with AsyncHost(demo) as host:
            with pytest.raises(ValueError):
                await host.call(ADD, [1])
            with pytest.raises(ValueError):
                await host.call(ADD, {"a": float("nan")})
    asyncio.run(main())


def test_a_closed_host_refuses(demo):
    async def main():
        host = AsyncHost(demo)
        await host.__aenter__()
        await host.close()
        with pytest.raises(AuroraError):
            await host.call(ADD, {"a": 1, "b": 1})
    asyncio.run(main())


def test_hung_calls_end_unknown_and_close_ends_the_rest(fixture_dir):
    log = write_fixture_app(fixture_dir, "org.test.hang", "--era", "modern",
                            "--hang-at", "call", timeout=30)
    tool = "aur.mcp.org.test.hang.t0000"

    async def main():
        async with AsyncHost(fixture_dir) as host:
            timed = await host.call(tool, {"text": "t"}, timeout=0.2)
            tasks = [asyncio.ensure_future(host.call(tool, {"text": str(i)}))
                     for i in range(30)]
            for _ in range(400):  # bounded: until the server holds some
                await asyncio.sleep(0.01)
                with open(log) as f:
                    if sum("tools/call" in l for l in f) >= 3:
                        break
        # Leaving the block shut the host down: every call has ended.
        assert all(t.done() for t in tasks)
        return timed, [t.result() for t in tasks]

    timed, outs = asyncio.run(main())
    assert timed.unknown
    statuses = [o.status for o in outs]
    assert set(statuses) <= {"unknown", "failed"}
    with open(log) as f:
        reached = sum("tools/call" in l for l in f) - 1  # less the timed one
    # No call the server got is reported failed.
    assert reached <= statuses.count("unknown")
