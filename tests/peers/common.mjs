// Shared pieces of the real-peer test servers: option parsing, the request
// log, the tool catalogue, tools/list paging with the list_changed options,
// capabilities and server info, and the tool behaviour. Nothing here
// touches an SDK; each server wires these into its own SDK's low-level
// Server class and throws its own SDK's errors.

import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const MAX_SLOW_MS = 120000;
const MAX_GENERATED = 100000;

// A 1x1 transparent PNG, so the image tool returns a real image block.
const PNG_1X1 =
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function die(msg) {
    process.stderr.write(`peer: ${msg}\n`);
    process.exit(2);
}

function parseJsonOpt(name, text) {
    if (text === undefined)
        return undefined;
    try {
        return JSON.parse(text);
    } catch (e) {
        die(`--${name}: invalid JSON: ${e.message}`);
    }
}

function parseIntOpt(name, text, min, max) {
    if (text === undefined)
        return undefined;
    if (!/^[0-9]+$/.test(text))
        die(`--${name}: expected a non-negative integer, got ${text}`);
    const v = Number(text);
    if (v < min || v > max)
        die(`--${name}: must be in [${min}, ${max}]`);
    return v;
}

// Options common to both servers; `extra` names server-specific ones.
export function parseOptions(argv, extra = {}) {
    const spec = {
        'name': { type: 'string' },
        'tools': { type: 'string' },
        'page-size': { type: 'string' },
        'log': { type: 'string' },
        'log-all': { type: 'boolean' },
        'extensions': { type: 'string' },
        'tool-meta': { type: 'string' },
        'instructions': { type: 'string' },
        'change-after-list': { type: 'boolean' },
        'change-during-list': { type: 'string' },
        'change-on-call': { type: 'boolean' },
        'exit-on-call': { type: 'boolean' },
        'wire-replace': { type: 'string' },
        ...extra,
    };
    let parsed;
    try {
        parsed = parseArgs({ args: argv, options: spec, strict: true,
                             allowPositionals: false });
    } catch (e) {
        die(e.message);
    }
    const v = parsed.values;
    const ext = parseJsonOpt('extensions', v['extensions']);
    if (ext !== undefined && (ext === null || typeof ext !== 'object' ||
                              Array.isArray(ext)))
        die('--extensions: expected a JSON object');
    const wr = parseJsonOpt('wire-replace', v['wire-replace']);
    if (wr !== undefined &&
        (!Array.isArray(wr) ||
         !wr.every((p) => Array.isArray(p) && p.length === 2 &&
                          typeof p[0] === 'string' && p[0] !== '' &&
                          typeof p[1] === 'string')))
        die('--wire-replace: expected [["from","to"], ...]');
    return {
        name: v['name'],
        wireReplace: wr,
        tools: parseIntOpt('tools', v['tools'], 0, MAX_GENERATED) ?? 0,
        pageSize: parseIntOpt('page-size', v['page-size'], 1, MAX_GENERATED),
        log: v['log'],
        logAll: v['log-all'] === true,
        extensions: ext,
        toolMeta: parseJsonOpt('tool-meta', v['tool-meta']),
        instructions: v['instructions'],
        changeAfterList: v['change-after-list'] === true,
        changeDuringList: parseIntOpt('change-during-list',
                                      v['change-during-list'], 1,
                                      MAX_GENERATED),
        changeOnCall: v['change-on-call'] === true,
        exitOnCall: v['exit-on-call'] === true,
        raw: v,
        parseJson: parseJsonOpt,
    };
}

// One JSON line per message. Inbound lines always; outbound lines only with
// --log-all. Tool arguments are never written (only the tool name).
export function makeLogger(opts) {
    if (!opts.log)
        return { inbound() {}, outbound() {} };
    const write = (obj) => {
        try {
            appendFileSync(opts.log, JSON.stringify(obj) + '\n');
        } catch (e) {
            process.stderr.write(`peer: log write failed: ${e.message}\n`);
        }
    };
    const describe = (dir, m) => {
        const line = { dir, pid: process.pid };
        if (m === null || typeof m !== 'object')
            return { dir, pid: process.pid, invalid: true };
        if ('method' in m)
            line.method = m.method;
        if ('id' in m)
            line.id = m.id;
        if ('error' in m)
            line.error = m.error?.code;
        const p = m.params;
        if (p && typeof p === 'object') {
            const meta = p._meta;
            const pv = meta?.['io.modelcontextprotocol/protocolVersion'];
            if (pv !== undefined)
                line.protocolVersion = pv;
            const caps = meta?.['io.modelcontextprotocol/clientCapabilities'];
            if (caps && typeof caps === 'object' && caps.extensions)
                line.extensions = caps.extensions;
            if (m.method === 'initialize') {
                line.protocolVersion = p.protocolVersion;
                if (p.capabilities?.extensions)
                    line.extensions = p.capabilities.extensions;
            }
            if (m.method === 'tools/call' && typeof p.name === 'string')
                line.name = p.name;
            if (m.method === 'tools/list' && 'cursor' in p)
                line.cursor = p.cursor;
            if (m.method === 'notifications/cancelled')
                line.requestId = p.requestId;
            if (meta?.['io.modelcontextprotocol/subscriptionId'] !== undefined)
                line.subscriptionId =
                    meta['io.modelcontextprotocol/subscriptionId'];
        }
        return line;
    };
    return {
        inbound(m) { write(describe('in', m)); },
        outbound(m) { if (opts.logAll) write(describe('out', m)); },
    };
}

export function buildTools(opts) {
    const tools = [
        {
            name: 'echo',
            description: 'Echo text back',
            inputSchema: {
                type: 'object',
                properties: { text: { type: 'string' } },
                required: ['text'],
            },
        },
        {
            name: 'add',
            description: 'Add two numbers',
            inputSchema: {
                type: 'object',
                properties: { a: { type: 'number' }, b: { type: 'number' } },
                required: ['a', 'b'],
            },
            outputSchema: {
                type: 'object',
                properties: { sum: { type: 'number' } },
                required: ['sum'],
            },
        },
        {
            name: 'fail',
            description: 'Always fails with isError',
            inputSchema: { type: 'object', properties: {} },
        },
        {
            name: 'image',
            description: 'Returns a 1x1 PNG image block',
            inputSchema: { type: 'object', properties: {} },
        },
        {
            name: 'slow',
            description: 'Waits ms milliseconds, then answers',
            inputSchema: {
                type: 'object',
                properties: { ms: { type: 'integer', minimum: 0 } },
            },
        },
    ];
    for (let i = 0; i < opts.tools; i++) {
        const name = 't' + String(i).padStart(4, '0');
        tools.push({
            name,
            description: `Generated tool ${i}`,
            inputSchema: { type: 'object', properties: {} },
        });
    }
    if (opts.toolMeta !== undefined)
        for (const t of tools)
            t._meta = structuredClone(opts.toolMeta);
    return tools;
}

// Cursors are "o:<offset>" so a test can see them; anything else is invalid.
export function pageOf(tools, pageSize, cursor) {
    let start = 0;
    if (cursor !== undefined) {
        const m = typeof cursor === 'string' ? /^o:([0-9]+)$/.exec(cursor)
                                             : null;
        if (!m || Number(m[1]) > tools.length)
            return { error: `Invalid cursor: ${JSON.stringify(cursor)}` };
        start = Number(m[1]);
    }
    if (pageSize === undefined)
        return { tools: tools.slice(start), index: 1, last: true };
    const end = Math.min(start + pageSize, tools.length);
    const page = { tools: tools.slice(start, end),
                   index: Math.floor(start / pageSize) + 1,
                   last: end >= tools.length };
    if (!page.last)
        page.nextCursor = `o:${end}`;
    return page;
}

// The tools/list result for a page of pageOf.
export function listResult(page) {
    const result = { tools: page.tools };
    if (page.nextCursor !== undefined)
        result.nextCursor = page.nextCursor;
    return result;
}

// tools/list with --change-during-list and --change-after-list. The first
// pass runs from the first cursorless request to its last page; the
// list_changed of each option is queued (once per process) after the
// response to page K of that pass, or to its last page. Returns
// list(cursor, id, listChanged) -> { result } or { error } (a bad cursor,
// which changes nothing); the caller throws its SDK's error.
export function makeListPass(tools, opts, after) {
    const state = {
        firstPassDone: false,
        firstPassActive: false,
        changeAfterListSent: false,
        changeDuringListSent: false,
    };
    return (cursor, id, listChanged) => {
        const page = pageOf(tools, opts.pageSize, cursor);
        if (page.error)
            return { error: page.error };
        if (cursor === undefined && !state.firstPassDone)
            state.firstPassActive = true;
        if (state.firstPassActive) {
            if (opts.changeDuringList !== undefined &&
                !state.changeDuringListSent &&
                page.index === opts.changeDuringList) {
                state.changeDuringListSent = true;
                after.queue(id, listChanged);
            }
            if (page.last) {
                state.firstPassActive = false;
                state.firstPassDone = true;
                if (opts.changeAfterList && !state.changeAfterListSent) {
                    state.changeAfterListSent = true;
                    after.queue(id, listChanged);
                }
            }
        }
        return { result: listResult(page) };
    };
}

// Capabilities every peer declares: tools with listChanged, then extra,
// then --extensions if given.
export function baseCapabilities(opts, extra = {}) {
    const caps = { tools: { listChanged: true }, ...extra };
    if (opts.extensions !== undefined)
        caps.extensions = opts.extensions;
    return caps;
}

// The (serverInfo, options) pair of an SDK Server: --name overrides the
// default name, --instructions is passed on when given.
export function serverArgs(opts, name, version, capabilities) {
    return [
        { name: opts.name ?? name, version },
        {
            capabilities,
            ...(opts.instructions !== undefined &&
                { instructions: opts.instructions }),
        },
    ];
}

// tools/call params up to the SDK's own error: --exit-on-call exits 3
// before anything else; then callTool's answer.
export async function toolCall(tools, opts, params) {
    if (opts.exitOnCall)
        process.exit(3);
    const { name, arguments: args } = params;
    return callTool(tools, name, args);
}

// Returns a CallToolResult, or { unknown: true } for an unknown tool.
export async function callTool(tools, name, args) {
    const a = args && typeof args === 'object' ? args : {};
    switch (name) {
    case 'echo':
        return { content: [{ type: 'text', text: String(a.text ?? '') }] };
    case 'add': {
        const sum = Number(a.a) + Number(a.b);
        return {
            content: [{ type: 'text', text: JSON.stringify({ sum }) }],
            structuredContent: { sum },
        };
    }
    case 'fail':
        return { content: [{ type: 'text', text: 'boom' }], isError: true };
    case 'image':
        return { content: [{ type: 'image', data: PNG_1X1,
                              mimeType: 'image/png' }] };
    case 'slow': {
        let ms = Number(a.ms ?? 100);
        if (!Number.isFinite(ms) || ms < 0)
            ms = 0;
        ms = Math.min(ms, MAX_SLOW_MS);
        await new Promise((r) => setTimeout(r, ms));
        return { content: [{ type: 'text', text: `slept ${ms}` }] };
    }
    default:
        if (tools.some((t) => t.name === name))
            return { content: [{ type: 'text', text: name }] };
        return { unknown: true };
    }
}

// Key for a JSON-RPC id that keeps its JSON type ("1" and 1 differ).
export function idKey(id) {
    return `${typeof id}:${String(id)}`;
}

// Exit promptly once stdin is gone, even if a slow tool timer is pending.
// The timer is unref'd so it never keeps a process alive by itself.
export function exitOnStdinEof(cleanup) {
    let done = false;
    const finish = () => {
        if (done)
            return;
        done = true;
        Promise.resolve()
            .then(() => cleanup?.())
            .catch(() => {})
            .finally(() => {
                setTimeout(() => process.exit(0), 200).unref();
            });
    };
    process.stdin.on('end', finish);
    process.stdin.on('close', finish);
}

// Work to run once a given response has been written to stdout, so a
// notification provably follows the answer it is tied to.
export class AfterResponse {
    constructor() { this.jobs = new Map(); }

    queue(id, fn) {
        const k = idKey(id);
        if (!this.jobs.has(k))
            this.jobs.set(k, []);
        this.jobs.get(k).push(fn);
    }

    sent(m) {
        if (!m || !('result' in m || 'error' in m) || m.id === undefined)
            return;
        const k = idKey(m.id);
        const jobs = this.jobs.get(k);
        if (!jobs)
            return;
        this.jobs.delete(k);
        for (const job of jobs)
            Promise.resolve().then(job).catch((e) =>
                process.stderr.write(`peer: follow-up failed: ${e}\n`));
    }
}

// Wraps an SDK's own stdio transport: logs each inbound message before the
// SDK sees it (including messages the SDK answers itself, such as v2's
// subscriptions/listen or v1's pre-init rejections) and runs queued
// follow-ups after a response leaves.
export class LoggingTransport {
    constructor(inner, log, after, wireReplace) {
        this.inner = inner;
        this.wireReplace = wireReplace;
        this.log = log;
        this.after = after;
        inner.onmessage = (m, extra) => {
            log.inbound(m);
            this.onmessage?.(m, extra);
        };
        inner.onclose = () => this.onclose?.();
        inner.onerror = (e) => this.onerror?.(e);
    }

    start() { return this.inner.start(); }

    async send(m, options) {
        if (this.wireReplace)
            await this.writeRewritten(m);
        else
            await this.inner.send(m, options);
        this.log.outbound(m);
        this.after.sent(m);
    }

    // --wire-replace: byte-level edits of outbound lines, for shapes JSON
    // values cannot express in JS (e.g. the float token 1.0).
    writeRewritten(m) {
        let line = JSON.stringify(m);
        for (const [from, to] of this.wireReplace)
            line = line.split(from).join(to);
        return new Promise((resolve, reject) => {
            if (process.stdout.write(line + '\n', (e) => e && reject(e)))
                resolve();
            else
                process.stdout.once('drain', resolve);
        });
    }

    setProtocolVersion(v) { this.inner.setProtocolVersion?.(v); }

    close() { return this.inner.close(); }
}
