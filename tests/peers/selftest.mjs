#!/usr/bin/env node
// Self-test of the real-peer servers with raw newline-delimited JSON-RPC
// (no SDK client): proves each server speaks the wire exactly as the C host
// will see it. Usage: node selftest.mjs [--trace] [filter-substring]
// --trace prints every C->S / S->C line to stderr. Exits 1 on any failure.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const HERE = dirname(fileURLToPath(import.meta.url));
const SDK2 = join(HERE, 'sdk2-server.mjs');
const SDK1 = join(HERE, 'sdk1-server.mjs');
// Only how long a failure takes to show: a loaded machine may need it.
const WAIT_MS = 30000;
const QUIET_MS = 300;

const argv = process.argv.slice(2);
const TRACE = argv.includes('--trace');
const FILTER = argv.find((a) => !a.startsWith('--'));

const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'aurora-selftest',
                                            version: '0.0.0' },
};
const TC_EXT = { 'org.aurorabot/tool-contract': { version: 1 } };

function env(extra = {}) {
    return { _meta: structuredClone(META), ...extra };
}

class Peer {
    constructor(script, args = []) {
        this.tag = script === SDK2 ? 'v2' : 'v1';
        this.child = spawn(process.execPath, [script, ...args],
                           { stdio: ['pipe', 'pipe', 'pipe'] });
        this.inbox = [];
        this.lines = [];
        this.waiters = [];
        this.stderr = '';
        this.exit = new Promise((resolve) => {
            this.child.on('exit', (code, signal) => resolve({ code, signal }));
        });
        let buf = '';
        this.child.stdout.setEncoding('utf8');
        this.child.stdout.on('data', (chunk) => {
            buf += chunk;
            let nl;
            while ((nl = buf.indexOf('\n')) >= 0) {
                const line = buf.slice(0, nl);
                buf = buf.slice(nl + 1);
                if (line.trim() === '')
                    continue;
                if (TRACE)
                    process.stderr.write(`  ${this.tag} S->C ${line}\n`);
                this.lines.push(line);
                let msg;
                try {
                    msg = JSON.parse(line);
                } catch {
                    msg = { unparsable: line };
                }
                this.inbox.push(msg);
                this.wake();
            }
        });
        this.child.stderr.setEncoding('utf8');
        this.child.stderr.on('data', (c) => { this.stderr += c; });
        this.child.stdin.on('error', () => {});
    }

    wake() {
        for (const w of [...this.waiters])
            w();
    }

    send(obj) {
        const line = JSON.stringify(obj);
        if (TRACE)
            process.stderr.write(`  ${this.tag} C->S ${line}\n`);
        this.child.stdin.write(line + '\n');
    }

    // Removes and returns the first message matching pred; throws on timeout.
    take(pred, what, ms = WAIT_MS) {
        return new Promise((resolve, reject) => {
            const check = () => {
                const i = this.inbox.findIndex(pred);
                if (i < 0)
                    return false;
                const [m] = this.inbox.splice(i, 1);
                done();
                resolve(m);
                return true;
            };
            const done = () => {
                clearTimeout(timer);
                this.waiters = this.waiters.filter((w) => w !== waiter);
            };
            const waiter = () => { check(); };
            const timer = setTimeout(() => {
                done();
                reject(new Error(`timeout waiting for ${what}; inbox: ` +
                                 JSON.stringify(this.inbox).slice(0, 600)));
            }, ms);
            this.waiters.push(waiter);
            check();
        });
    }

    reply(id, ms) {
        return this.take((m) => 'id' in m && !('method' in m) &&
                                isDeepStrictEqual(m.id, id),
                         `response id ${JSON.stringify(id)}`, ms);
    }

    note(method, ms) {
        return this.take((m) => m.method === method && !('id' in m),
                         `notification ${method}`, ms);
    }

    async request(id, method, params) {
        const msg = { jsonrpc: '2.0', id, method };
        if (params !== undefined)
            msg.params = params;
        this.send(msg);
        return this.reply(id);
    }

    notify(method, params) {
        const msg = { jsonrpc: '2.0', method };
        if (params !== undefined)
            msg.params = params;
        this.send(msg);
    }

    // The legacy handshake: initialize (2025-11-25, caps) with id 0, then
    // notifications/initialized. Returns the initialize response.
    async handshake(caps = {}) {
        const init = await this.request(0, 'initialize',
                                        legacyInit('2025-11-25', caps));
        this.notify('notifications/initialized');
        return init;
    }

    // Resolves true if nothing matching pred arrives within ms.
    async none(pred, ms = QUIET_MS) {
        try {
            await this.take(pred, 'nothing', ms);
            return false;
        } catch {
            return true;
        }
    }

    async close(ms = 3000) {
        this.child.stdin.end();
        const t = new Promise((r) => setTimeout(() => r(null), ms));
        const res = await Promise.race([this.exit, t]);
        if (res === null) {
            this.child.kill('SIGKILL');
            await this.exit;
        }
        return res;
    }
}

class AssertError extends Error {}

function ok(cond, msg) {
    if (!cond)
        throw new AssertError(msg);
}

function eq(actual, expected, msg) {
    if (!isDeepStrictEqual(actual, expected))
        throw new AssertError(`${msg}: expected ${JSON.stringify(expected)}` +
                              `, got ${JSON.stringify(actual)}`);
}

function isResult(m) {
    return m && typeof m.result === 'object' && m.result !== null;
}

// What a server with --extensions TC_EXT answers a handshake(TC_EXT) with.
function tcInitResult(name, version) {
    return {
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true }, extensions: TC_EXT },
        serverInfo: { name, version },
    };
}

function legacyInit(version = '2025-11-25', caps = {}) {
    return { protocolVersion: version, capabilities: caps,
             clientInfo: { name: 'aurora-selftest', version: '0.0.0' } };
}

async function listAllModern(p, firstId) {
    const pages = [];
    let cursor;
    let id = firstId;
    for (let n = 0; n < 64; n++) {
        const r = await p.request(id++, 'tools/list',
                                  env(cursor === undefined ? {} : { cursor }));
        ok(isResult(r), `tools/list page ${n + 1} is a result: ` +
                        JSON.stringify(r));
        pages.push(r.result);
        if (r.result.nextCursor === undefined || r.result.nextCursor === null)
            return pages;
        cursor = r.result.nextCursor;
    }
    throw new AssertError('more than 64 pages');
}

const BASE = ['echo', 'add', 'fail', 'image', 'slow'];
const tests = [];
function test(name, fn) {
    tests.push({ name, fn });
}

// ---------------------------------------------------------------- SDK v2

test('v2 server/discover result shape', async () => {
    const p = new Peer(SDK2, ['--extensions', JSON.stringify(TC_EXT),
                              '--instructions', 'peer']);
    try {
        const r = await p.request('probe-1', 'server/discover', env());
        ok(isResult(r), 'discover is a result');
        const x = r.result;
        eq(x.supportedVersions, ['2026-07-28'], 'supportedVersions');
        eq(x.capabilities, { tools: { listChanged: true },
                             extensions: TC_EXT }, 'capabilities');
        eq(x.resultType, 'complete', 'resultType');
        eq(x.ttlMs, 0, 'ttlMs');
        eq(x.cacheScope, 'private', 'cacheScope');
        eq(x.instructions, 'peer', 'instructions');
        eq(x._meta?.['io.modelcontextprotocol/serverInfo'],
           { name: 'aurora-peer-sdk2', version: '2.4.0-peer' }, 'serverInfo');
        ok(!('serverInfo' in x), 'no top-level serverInfo');
    } finally {
        await p.close();
    }
});

test('v2 server/discover with unsupported version -> -32022', async () => {
    const p = new Peer(SDK2);
    try {
        const m = env();
        m._meta['io.modelcontextprotocol/protocolVersion'] = '2099-01-01';
        const r = await p.request('d0', 'server/discover', m);
        eq(r.error?.code, -32022, 'code');
        eq(r.error?.data, { supported: ['2026-07-28'],
                            requested: '2099-01-01' }, 'data');
        // The connection is still open for a modern opening.
        const r2 = await p.request('d1', 'server/discover', env());
        ok(isResult(r2), 'second discover answered');
    } finally {
        await p.close();
    }
});

test('v2 subscriptions/listen ack (string and integer ids)', async () => {
    const p = new Peer(SDK2);
    try {
        await p.request('probe-1', 'server/discover', env());
        p.send({ jsonrpc: '2.0', id: 'listen:0', method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true,
                                                promptsListChanged: true } }) });
        const ack = await p.note('notifications/subscriptions/acknowledged');
        eq(ack.params, {
            notifications: { toolsListChanged: true },
            _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen:0' },
        }, 'ack params (prompts dropped: no prompts capability)');
        ok(await p.none((m) => isDeepStrictEqual(m.id, 'listen:0')),
           'no response for the open listen');
        p.send({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true } }) });
        const ack7 = await p.note('notifications/subscriptions/acknowledged');
        eq(ack7.params._meta['io.modelcontextprotocol/subscriptionId'], 7,
           'integer subscriptionId keeps its type');
    } finally {
        await p.close();
    }
});

test('v2 tools/list pagination, order and tool _meta', async () => {
    const meta = { 'org.aurorabot/tool-contract': { observe: ['x:{text}'] } };
    const p = new Peer(SDK2, ['--tools', '7', '--page-size', '5',
                              '--tool-meta', JSON.stringify(meta)]);
    try {
        const pages = await listAllModern(p, 1);
        eq(pages.map((x) => x.tools.length), [5, 5, 2], 'page sizes');
        eq(pages.map((x) => x.nextCursor), ['o:5', 'o:10', undefined],
           'cursors');
        for (const x of pages) {
            eq(x.resultType, 'complete', 'resultType');
            eq(x.ttlMs, 0, 'ttlMs');
            eq(x.cacheScope, 'private', 'cacheScope');
        }
        const names = pages.flatMap((x) => x.tools.map((t) => t.name));
        eq(names, [...BASE, 't0000', 't0001', 't0002', 't0003', 't0004',
                   't0005', 't0006'], 'names in order');
        for (const x of pages)
            for (const t of x.tools)
                eq(t._meta, meta, `_meta of ${t.name}`);
        const bad = await p.request(99, 'tools/list', env({ cursor: 'zz' }));
        eq(bad.error?.code, -32602, 'invalid cursor code');
    } finally {
        await p.close();
    }
});

test('v2 tools/call echo/add/fail/image/slow/unknown', async () => {
    const p = new Peer(SDK2);
    try {
        let r = await p.request(1, 'tools/call',
                                env({ name: 'echo',
                                      arguments: { text: 'hi' } }));
        eq(r.result?.content, [{ type: 'text', text: 'hi' }], 'echo content');
        eq(r.result?.resultType, 'complete', 'echo resultType');
        ok(!('isError' in r.result), 'echo has no isError');
        r = await p.request(2, 'tools/call',
                            env({ name: 'add', arguments: { a: 2, b: 3 } }));
        eq(r.result?.structuredContent, { sum: 5 }, 'add structuredContent');
        eq(r.result?.content, [{ type: 'text', text: '{"sum":5}' }],
           'add text');
        r = await p.request(3, 'tools/call',
                            env({ name: 'fail', arguments: {} }));
        eq(r.result?.isError, true, 'fail isError');
        eq(r.result?.content, [{ type: 'text', text: 'boom' }], 'fail text');
        r = await p.request(4, 'tools/call',
                            env({ name: 'image', arguments: {} }));
        eq(r.result?.content?.[0]?.type, 'image', 'image block');
        eq(r.result?.content?.[0]?.mimeType, 'image/png', 'image mime');
        const t0 = Date.now();
        r = await p.request(5, 'tools/call',
                            env({ name: 'slow', arguments: { ms: 200 } }));
        ok(Date.now() - t0 >= 180, 'slow waited');
        eq(r.result?.content, [{ type: 'text', text: 'slept 200' }], 'slow');
        r = await p.request(6, 'tools/call',
                            env({ name: 'nope', arguments: {} }));
        eq(r.error, { code: -32602, message: 'Tool nope not found' },
           'unknown tool error');
    } finally {
        await p.close();
    }
});

test('v2 modern-pinned: envelope-less tools/list -> -32602', async () => {
    const p = new Peer(SDK2);
    try {
        ok(isResult(await p.request(1, 'tools/list', env())), 'pins modern');
        const r = await p.request(2, 'tools/list', {});
        eq(r.error?.code, -32602, 'missing envelope code');
        const r2 = await p.request(3, 'tools/list');
        eq(r2.error?.code, -32602, 'no params code');
    } finally {
        await p.close();
    }
});

test('v2 modern-pinned: initialize -> -32022', async () => {
    const p = new Peer(SDK2);
    try {
        ok(isResult(await p.request(1, 'tools/list', env())), 'pins modern');
        const r = await p.request(0, 'initialize', legacyInit());
        eq(r.error?.code, -32022, 'code');
        eq(r.error?.data, { supported: ['2026-07-28'],
                            requested: '2025-11-25' }, 'data');
    } finally {
        await p.close();
    }
});

test('v2 discover does not pin: initialize afterwards is legacy', async () => {
    const p = new Peer(SDK2);
    try {
        ok(isResult(await p.request('probe-1', 'server/discover', env())),
           'discover');
        const r = await p.request(0, 'initialize', legacyInit());
        eq(r.result?.protocolVersion, '2025-11-25', 'legacy served');
    } finally {
        await p.close();
    }
});

test('v2 legacy era via initialize', async () => {
    const p = new Peer(SDK2, ['--extensions', JSON.stringify(TC_EXT),
                              '--page-size', '3', '--change-on-call']);
    try {
        const init = await p.handshake({ extensions: TC_EXT });
        eq(init.result, tcInitResult('aurora-peer-sdk2', '2.4.0-peer'),
           'InitializeResult');
        const l = await p.request(1, 'tools/list');
        ok(!('resultType' in l.result) && !('ttlMs' in l.result),
           'legacy list has no resultType/ttlMs');
        eq(l.result.nextCursor, 'o:3', 'legacy paginates too');
        const l2 = await p.request(2, 'tools/list', env());
        ok(!('resultType' in l2.result), 'enveloped list served legacy');
        const lis = await p.request('L1', 'subscriptions/listen',
                                    env({ notifications:
                                          { toolsListChanged: true } }));
        eq(lis.error?.code, -32601, 'listen on legacy');
        const c = await p.request(3, 'tools/call',
                                  { name: 'echo', arguments: { text: 'x' } });
        eq(c.result, { content: [{ type: 'text', text: 'x' }] },
           'legacy call result');
        const n = await p.note('notifications/tools/list_changed');
        ok(!('params' in n), 'legacy list_changed has no params');
    } finally {
        await p.close();
    }
});

test('v2 old legacy revision 2024-11-05 is echoed', async () => {
    const p = new Peer(SDK2);
    try {
        const r = await p.request(0, 'initialize', legacyInit('2024-11-05'));
        eq(r.result?.protocolVersion, '2024-11-05', 'version');
    } finally {
        await p.close();
    }
});

test('v2 --change-after-list fires once, after the last page', async () => {
    const p = new Peer(SDK2, ['--tools', '3', '--page-size', '3',
                              '--change-after-list']);
    try {
        p.send({ jsonrpc: '2.0', id: 'listen:0', method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true } }) });
        await p.note('notifications/subscriptions/acknowledged');
        await p.request(1, 'tools/list', env());
        await p.request(2, 'tools/list', env({ cursor: 'o:3' }));
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'nothing before the last page');
        await p.request(3, 'tools/list', env({ cursor: 'o:6' }));
        const n = await p.note('notifications/tools/list_changed');
        eq(n.params, { _meta: { 'io.modelcontextprotocol/subscriptionId':
                                'listen:0' } }, 'list_changed params');
        await listAllModern(p, 10);
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'only once');
    } finally {
        await p.close();
    }
});

test('v2 --change-during-list 1 fires after page 1', async () => {
    const p = new Peer(SDK2, ['--tools', '3', '--page-size', '4',
                              '--change-during-list', '1']);
    try {
        p.send({ jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true } }) });
        await p.note('notifications/subscriptions/acknowledged');
        const r = await p.request(1, 'tools/list', env());
        eq(r.result.nextCursor, 'o:4', 'page 1 has a cursor');
        const n = await p.note('notifications/tools/list_changed');
        eq(n.params._meta['io.modelcontextprotocol/subscriptionId'], 'L',
           'stamped');
    } finally {
        await p.close();
    }
});

test('v2 list_changed without a listen is not sent', async () => {
    const p = new Peer(SDK2, ['--change-on-call']);
    try {
        await p.request(1, 'tools/call',
                        env({ name: 'echo', arguments: { text: 'a' } }));
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'no unsolicited list_changed on modern');
    } finally {
        await p.close();
    }
});

test('v2 --change-on-call and cancelling the listen', async () => {
    const p = new Peer(SDK2, ['--change-on-call']);
    try {
        p.send({ jsonrpc: '2.0', id: 'L1', method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true } }) });
        await p.note('notifications/subscriptions/acknowledged');
        await p.request(1, 'tools/call',
                        env({ name: 'echo', arguments: { text: 'a' } }));
        await p.note('notifications/tools/list_changed');
        p.notify('notifications/cancelled', { requestId: 'L1' });
        await p.request(2, 'tools/call',
                        env({ name: 'echo', arguments: { text: 'b' } }));
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed' ||
                               isDeepStrictEqual(m.id, 'L1')),
           'nothing for L1 after cancel');
    } finally {
        await p.close();
    }
});

test('v2 --event sends the world-events notification', async () => {
    const ev = { event_id: 'e-1', scope: 'aurora:mcp:x', kind: 'demo.kind',
                 occurred_at: '2026-01-01T00:00:00Z', summary: 'hello',
                 data: { n: 1 } };
    const p = new Peer(SDK2, ['--event', JSON.stringify(ev)]);
    try {
        await p.request(1, 'tools/call',
                        env({ name: 'echo', arguments: { text: 'a' } }));
        const n = await p.note('notifications/org.aurorabot/world-events/event');
        eq(n.params, ev, 'params verbatim, no _meta added');
    } finally {
        await p.close();
    }
});

test('v2 --exit-on-call exits 3 without answering', async () => {
    const p = new Peer(SDK2, ['--exit-on-call']);
    p.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
             params: env({ name: 'echo', arguments: { text: 'a' } }) });
    const res = await p.exit;
    eq(res.code, 3, 'exit code');
    ok(!p.inbox.some((m) => isDeepStrictEqual(m.id, 1)), 'no answer');
});

test('v2 --log records listen before the first tools/list', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aurora-peer-'));
    const file = join(dir, 'log.jsonl');
    const p = new Peer(SDK2, ['--log', file, '--log-all',
                              '--extensions', JSON.stringify(TC_EXT)]);
    try {
        await p.request('probe-1', 'server/discover', env());
        p.send({ jsonrpc: '2.0', id: 'listen:0', method: 'subscriptions/listen',
                 params: env({ notifications: { toolsListChanged: true } }) });
        await p.note('notifications/subscriptions/acknowledged');
        const e = env();
        e._meta['io.modelcontextprotocol/clientCapabilities'] =
            { extensions: TC_EXT };
        await p.request(0, 'tools/list', e);
        eq((await p.close())?.code, 0, 'exit 0');
        const lines = readFileSync(file, 'utf8').trim().split('\n')
            .map((l) => JSON.parse(l));
        const inbound = lines.filter((l) => l.dir === 'in');
        eq(inbound.map((l) => [l.method, l.id]),
           [['server/discover', 'probe-1'], ['subscriptions/listen', 'listen:0'],
            ['tools/list', 0]], 'inbound order');
        eq(inbound[2].extensions, TC_EXT, 'logged client extensions');
        const ackAt = lines.findIndex((l) => l.dir === 'out' && l.method ===
                                     'notifications/subscriptions/acknowledged');
        const listAt = lines.findIndex((l) => l.dir === 'in' &&
                                      l.method === 'tools/list');
        ok(ackAt >= 0 && ackAt < listAt, 'ack logged before tools/list');
    } finally {
        await p.close();
        rmSync(dir, { recursive: true, force: true });
    }
});

test('v2 exits 0 on stdin EOF, also with a slow call in flight', async () => {
    const p = new Peer(SDK2);
    await p.request(1, 'tools/list', env());
    p.send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
             params: env({ name: 'slow', arguments: { ms: 60000 } }) });
    const t0 = Date.now();
    const res = await p.close(3000);
    eq(res?.code, 0, 'exit code');
    ok(Date.now() - t0 < 2500, 'prompt exit');
});

test('--wire-replace rewrites outbound bytes (float 1.0)', async () => {
    const rep = JSON.stringify([['"version":1}', '"version":1.0}']]);
    for (const script of [SDK2, SDK1]) {
        const p = new Peer(script, ['--extensions', JSON.stringify(TC_EXT),
                                    '--wire-replace', rep]);
        try {
            if (script === SDK2)
                await p.request('probe-1', 'server/discover', env());
            else
                await p.request(0, 'initialize', legacyInit());
            ok(p.lines[0].includes(
                   '"extensions":{"org.aurorabot/tool-contract":' +
                   '{"version":1.0}}'), `${p.tag} raw line: ${p.lines[0]}`);
        } finally {
            await p.close();
        }
    }
});

// ---------------------------------------------------------------- SDK v1

test('v1 pre-init server/discover -> -32601, then initialize works',
     async () => {
    const p = new Peer(SDK1, ['--extensions', JSON.stringify(TC_EXT)]);
    try {
        const r = await p.request('probe-1', 'server/discover', env());
        eq(r.error, { code: -32601, message: 'Method not found' },
           'discover error');
        const init = await p.handshake({ extensions: TC_EXT });
        eq(init.result, tcInitResult('aurora-peer-sdk1', '1.32.2-peer'),
           'InitializeResult');
        const l = await p.request(1, 'tools/list');
        eq(l.result.tools.map((t) => t.name), BASE, 'tool names');
        ok(!('resultType' in l.result), 'no resultType');
    } finally {
        await p.close();
    }
});

test('v1 initialize version negotiation', async () => {
    for (const [asked, got] of [['2026-07-28', '2025-11-25'],
                                ['2025-11-25', '2025-11-25'],
                                ['2025-06-18', '2025-06-18'],
                                ['2024-11-05', '2024-11-05'],
                                ['1999-01-01', '2025-11-25']]) {
        const p = new Peer(SDK1);
        try {
            const r = await p.request(0, 'initialize', legacyInit(asked));
            eq(r.result?.protocolVersion, got, `asked ${asked}`);
        } finally {
            await p.close();
        }
    }
});

test('v1 pre-init tools/list is executed (no init enforcement)',
     async () => {
    const p = new Peer(SDK1);
    try {
        const r = await p.request(1, 'tools/list');
        ok(isResult(r), 'answered with a result: ' + JSON.stringify(r));
        const r2 = await p.request(2, 'tools/list', env());
        ok(isResult(r2) && !('resultType' in r2.result),
           'enveloped request served legacy-shaped');
    } finally {
        await p.close();
    }
});

test('v1 subscriptions/listen -> -32601', async () => {
    const p = new Peer(SDK1);
    try {
        await p.handshake();
        const r = await p.request('L1', 'subscriptions/listen',
                                  env({ notifications:
                                        { toolsListChanged: true } }));
        eq(r.error?.code, -32601, 'code');
    } finally {
        await p.close();
    }
});

test('v1 pagination, tool _meta and calls', async () => {
    const meta = { 'org.aurorabot/tool-contract': {} };
    const p = new Peer(SDK1, ['--tools', '2', '--page-size', '4',
                              '--tool-meta', JSON.stringify(meta)]);
    try {
        await p.handshake();
        const a = await p.request(1, 'tools/list');
        eq(a.result.nextCursor, 'o:4', 'cursor 1');
        const b = await p.request(2, 'tools/list', { cursor: 'o:4' });
        eq(b.result.nextCursor, undefined, 'last page');
        const names = [...a.result.tools, ...b.result.tools].map((t) => t.name);
        eq(names, [...BASE, 't0000', 't0001'], 'names');
        eq(a.result.tools[0]._meta, meta, 'tool _meta');
        let r = await p.request(3, 'tools/call',
                                { name: 'echo', arguments: { text: 'hi' } });
        eq(r.result, { content: [{ type: 'text', text: 'hi' }] }, 'echo');
        r = await p.request(4, 'tools/call',
                            { name: 'add', arguments: { a: 1, b: 2 } });
        eq(r.result?.structuredContent, { sum: 3 }, 'add');
        r = await p.request(5, 'tools/call', { name: 'fail', arguments: {} });
        eq(r.result, { content: [{ type: 'text', text: 'boom' }],
                       isError: true }, 'fail');
        r = await p.request(6, 'tools/call', { name: 'image', arguments: {} });
        eq(r.result?.content?.[0]?.type, 'image', 'image');
        r = await p.request(7, 'tools/call', { name: 'nope', arguments: {} });
        eq(r.error, { code: -32602,
                      message: 'MCP error -32602: Tool nope not found' },
           'unknown tool');
        r = await p.request(8, 'tools/list', { cursor: 'bad' });
        eq(r.error?.code, -32602, 'bad cursor');
    } finally {
        await p.close();
    }
});

test('v1 --change-after-list sends unsolicited list_changed once',
     async () => {
    const p = new Peer(SDK1, ['--page-size', '3', '--change-after-list']);
    try {
        await p.handshake();
        await p.request(1, 'tools/list');
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'not after page 1');
        await p.request(2, 'tools/list', { cursor: 'o:3' });
        const n = await p.note('notifications/tools/list_changed');
        eq(n, { method: 'notifications/tools/list_changed', jsonrpc: '2.0' },
           'exact notification');
        await p.request(3, 'tools/list');
        await p.request(4, 'tools/list', { cursor: 'o:3' });
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'only once');
    } finally {
        await p.close();
    }
});

test('v1 --change-during-list and --change-on-call', async () => {
    const p = new Peer(SDK1, ['--page-size', '2', '--change-during-list', '2',
                              '--change-on-call']);
    try {
        await p.handshake();
        await p.request(1, 'tools/list');
        ok(await p.none((m) => m.method === 'notifications/tools/list_changed'),
           'not after page 1');
        await p.request(2, 'tools/list', { cursor: 'o:2' });
        await p.note('notifications/tools/list_changed');
        await p.request(3, 'tools/call', { name: 'fail', arguments: {} });
        await p.note('notifications/tools/list_changed');
    } finally {
        await p.close();
    }
});

test('v1 --legacy-event sends notifications/message', async () => {
    const ev = { event_id: 'e-2', scope: 'aurora:mcp:x', kind: 'k',
                 occurred_at: '2026-01-01T00:00:00+02:00', summary: 's' };
    const p = new Peer(SDK1, ['--legacy-event', JSON.stringify(ev)]);
    try {
        const init = await p.handshake();
        eq(init.result.capabilities.logging, {}, 'logging capability');
        await p.request(1, 'tools/call',
                        { name: 'echo', arguments: { text: 'a' } });
        const n = await p.note('notifications/message');
        eq(n.params, { level: 'info', logger: 'aurora/event', data: ev },
           'params');
    } finally {
        await p.close();
    }
});

test('v1 --exit-on-call exits 3', async () => {
    const p = new Peer(SDK1, ['--exit-on-call']);
    await p.handshake();
    p.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
             params: { name: 'echo', arguments: { text: 'a' } } });
    const res = await p.exit;
    eq(res.code, 3, 'exit code');
});

test('v1 --log and exit 0 on stdin EOF', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'aurora-peer-'));
    const file = join(dir, 'log.jsonl');
    const p = new Peer(SDK1, ['--log', file]);
    try {
        await p.request('probe-1', 'server/discover', env());
        await p.handshake({ extensions: TC_EXT });
        await p.request(1, 'tools/list');
        p.send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
                 params: { name: 'slow', arguments: { ms: 60000 } } });
        const t0 = Date.now();
        eq((await p.close())?.code, 0, 'exit code');
        ok(Date.now() - t0 < 2500, 'prompt exit');
        const lines = readFileSync(file, 'utf8').trim().split('\n')
            .map((l) => JSON.parse(l));
        eq(lines.map((l) => l.method),
           ['server/discover', 'initialize', 'notifications/initialized',
            'tools/list', 'tools/call'], 'logged methods');
        eq(lines[1].extensions, TC_EXT, 'initialize extensions logged');
        ok(lines.every((l) => l.dir === 'in'), 'inbound only without --log-all');
    } finally {
        await p.close();
        rmSync(dir, { recursive: true, force: true });
    }
});

// ---------------------------------------------------------------- runner

let passed = 0;
let failed = 0;
for (const t of tests) {
    if (FILTER && !t.name.includes(FILTER))
        continue;
    try {
        await t.fn();
        passed++;
        console.log(`ok   ${t.name}`);
    } catch (e) {
        failed++;
        console.log(`FAIL ${t.name}: ${e.message}`);
    }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
