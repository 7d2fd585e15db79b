#!/usr/bin/env node
// Reference client for bench/run.sh: the official MCP TypeScript SDK v2
// client (@modelcontextprotocol/client 2.4.0) over stdio, pinned to the
// modern revision 2026-07-28 (no legacy fallback, no probe sibling).
//
// Usage: node sdk-client.mjs [--apps A] [--calls N] [--inflight K]
//          [--tool NAME] (--url URL | -- CMD [ARG]...)
// --url: Streamable HTTP (StreamableHTTPClientTransport, keep-alive) to a
// running server instead of spawning CMD; a private CA comes from
// NODE_EXTRA_CA_CERTS.
// Spawns A copies of CMD and connects to them together (Promise.all), lists
// every tools/list page of each, then makes N tools/call of NAME on the
// first one: sequentially (K = 1) or in Promise.all batches of K.
// Prints one JSON line:
//   {"client":"sdk","tools":T,"start_ms":..,"calls":N,"failed":F,
//    "call_ms":..,"cpu_ms":..,"rss_kib":..}
// cpu_ms and rss_kib are this node process only, taken after the calls.

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

function parse(argv) {
    const o = { apps: 1, calls: 0, inflight: 1, tool: 't0000', cmd: [] };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === '--') {
            o.cmd = argv.slice(i + 1);
            break;
        }
        const v = argv[++i];
        if (a === '--apps') o.apps = Number(v);
        else if (a === '--calls') o.calls = Number(v);
        else if (a === '--inflight') o.inflight = Number(v);
        else if (a === '--tool') o.tool = v;
        else if (a === '--url') o.url = v;
        else throw new Error(`unknown option ${a}`);
    }
    if (!(o.cmd.length || o.url) || !(o.apps >= 1) || !(o.inflight >= 1))
        throw new Error('usage: sdk-client.mjs [--apps A] [--calls N] ' +
                        '[--inflight K] [--tool NAME] ' +
                        '(--url URL | -- CMD [ARG]...)');
    return o;
}

async function open(o) {
    const client = new Client(
        { name: 'aurora-bench-sdk', version: '0.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const transport = o.url
        ? new StreamableHTTPClientTransport(new URL(o.url))
        : new StdioClientTransport({ command: o.cmd[0], args: o.cmd.slice(1),
                                     stderr: 'ignore' });
    await client.connect(transport);
    let tools = 0;
    let cursor;
    // Bounded: a server that never ends its pages stops at 100 000 pages.
    for (let page = 0; page < 100000; page++) {
        const r = await client.listTools(cursor === undefined
                                         ? undefined : { cursor });
        tools += r.tools.length;
        cursor = r.nextCursor;
        if (cursor === undefined)
            break;
    }
    return { client, tools };
}

async function main() {
    const o = parse(process.argv.slice(2));
    const t0 = performance.now();
    const conns = await Promise.all(
        Array.from({ length: o.apps }, () => open(o)));
    const t1 = performance.now();
    const c = conns[0].client;
    let failed = 0;
    const one = async () => {
        try {
            const r = await c.callTool({ name: o.tool, arguments: {} });
            if (r.isError)
                failed++;
        } catch {
            failed++;
        }
    };
    for (let done = 0; done < o.calls;) {
        const k = Math.min(o.inflight, o.calls - done);
        if (k === 1)
            await one();
        else
            await Promise.all(Array.from({ length: k }, one));
        done += k;
    }
    const t2 = performance.now();
    const cpu = process.cpuUsage();
    const rss = process.resourceUsage().maxRSS; // KiB on Linux
    process.stdout.write(JSON.stringify({
        client: 'sdk',
        tools: conns.reduce((s, x) => s + x.tools, 0),
        start_ms: +(t1 - t0).toFixed(3),
        calls: o.calls, failed,
        call_ms: +(t2 - t1).toFixed(3),
        cpu_ms: +((cpu.user + cpu.system) / 1000).toFixed(3),
        rss_kib: rss,
    }) + '\n');
    await Promise.all(conns.map((x) => x.client.close()));
    process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
    process.stderr.write(`sdk-client: ${e.stack ?? e}\n`);
    process.exit(1);
});
