// Shared pieces of the HTTPS real-peer servers (sdk2-http-server.mjs,
// sdk1-http-server.mjs): the extra options, the per-request log, the
// bearer gate and the node:https listener on 127.0.0.1. Nothing here
// touches an SDK.

import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const MAX_BODY = 4 * 1024 * 1024;

// Options only the HTTP servers take; passed as `extra` to parseOptions.
export const HTTP_OPTIONS = {
    'cert': { type: 'string' },
    'key': { type: 'string' },
    'require-bearer': { type: 'string' },
};

function die(msg) {
    process.stderr.write(`peer: ${msg}\n`);
    process.exit(2);
}

// One JSON line per received HTTP request: the HTTP method, the JSON-RPC
// method/id (and tool name or cursor) of a POST body, and which MCP headers
// came with it. mcp-session-id and authorization are logged as presence
// only, never their values.
export function makeHttpLogger(file) {
    if (!file)
        return () => {};
    return (req, msg) => {
        const h = req.headers;
        const line = { dir: 'in', pid: process.pid, http: req.method };
        if (msg && typeof msg === 'object' && !Array.isArray(msg)) {
            if ('method' in msg)
                line.method = msg.method;
            if ('id' in msg)
                line.id = msg.id;
            const p = msg.params;
            if (p && typeof p === 'object') {
                if (msg.method === 'tools/call' && typeof p.name === 'string')
                    line.name = p.name;
                if (msg.method === 'tools/list' && p.cursor !== undefined)
                    line.cursor = p.cursor;
                if (msg.method === 'initialize')
                    line.protocolVersion = p.protocolVersion;
            }
        } else if (msg !== undefined) {
            line.invalid = true;
        }
        for (const k of ['mcp-protocol-version', 'mcp-method', 'mcp-name'])
            if (typeof h[k] === 'string')
                line[k] = h[k];
        if (h['mcp-session-id'] !== undefined)
            line['mcp-session-id'] = true;
        if (h['authorization'] !== undefined)
            line['authorization'] = true;
        try {
            appendFileSync(file, JSON.stringify(line) + '\n');
        } catch (e) {
            process.stderr.write(`peer: log write failed: ${e.message}\n`);
        }
    };
}

// One line {"dir":"done","done":<what>,"status":<HTTP status>}: the
// answer to a notification POST (what = its method) or a GET stream
// (what = "GET") is about to go out.
export function logDoneLine(file, what, status) {
    if (!file)
        return;
    const line = { dir: 'done', pid: process.pid, done: what, status };
    try {
        appendFileSync(file, JSON.stringify(line) + '\n');
    } catch (e) {
        process.stderr.write(`peer: log write failed: ${e.message}\n`);
    }
}

// The whole request body, bounded; rejects past MAX_BODY.
export function readBody(req) {
    return new Promise((resolve, reject) => {
        const parts = [];
        let n = 0;
        req.on('data', (c) => {
            n += c.length;
            if (n > MAX_BODY) {
                reject(new Error('body too large'));
                req.destroy();
                return;
            }
            parts.push(c);
        });
        req.on('end', () => resolve(Buffer.concat(parts)));
        req.on('error', reject);
    });
}

export function parseBody(buf) {
    if (buf.length === 0)
        return undefined;
    try {
        return JSON.parse(buf.toString('utf8'));
    } catch {
        return null;
    }
}

// true when the request may pass; otherwise a 401 has been sent.
export function bearerGate(token, req, res) {
    if (token === undefined)
        return true;
    if (req.headers['authorization'] === `Bearer ${token}`)
        return true;
    res.writeHead(401, { 'content-type': 'application/json',
                         'www-authenticate': 'Bearer' });
    res.end(JSON.stringify({ error: 'unauthorized' }));
    return false;
}

// Serves handle(req, res) over TLS on 127.0.0.1 at a random port and
// prints "PORT <n>" once listening. Exits on stdin EOF (the test closes
// its end of the pipe) so no server outlives its test.
export function listenHttps(opts, handle) {
    if (!opts.raw['cert'] || !opts.raw['key'])
        die('--cert and --key are required');
    let cert, key;
    try {
        cert = readFileSync(opts.raw['cert']);
        key = readFileSync(opts.raw['key']);
    } catch (e) {
        die(e.message);
    }
    const server = createServer({ cert, key }, (req, res) => {
        Promise.resolve(handle(req, res)).catch((e) => {
            process.stderr.write(`peer: ${e.stack ?? e}\n`);
            if (!res.headersSent)
                res.writeHead(500, { 'content-type': 'text/plain' });
            res.end();
        });
    });
    server.listen(0, '127.0.0.1', () => {
        process.stdout.write(`PORT ${server.address().port}\n`);
    });
    const finish = () => setTimeout(() => process.exit(0), 100).unref();
    process.stdin.on('end', finish);
    process.stdin.on('close', finish);
    process.stdin.resume();
    return server;
}

// listenHttps for an MCP endpoint: reads a POST's body (msg: its JSON,
// undefined if empty, null if not JSON), logs the request to --log,
// answers 401 for --require-bearer, and otherwise calls
// handle(req, res, body, msg).
export function serveMcpHttps(opts, handle) {
    const log = makeHttpLogger(opts.log);
    const bearer = opts.raw['require-bearer'];
    return listenHttps(opts, async (req, res) => {
        const body = req.method === 'POST' ? await readBody(req) : undefined;
        const msg = body ? parseBody(body) : undefined;
        log(req, msg);
        if (!bearerGate(bearer, req, res))
            return;
        await handle(req, res, body, msg);
    });
}

// Writes a web-standard Response to a node ServerResponse, streaming its
// body (SSE) as it comes. Aborts `ac` when the client goes away first.
export async function sendWebResponse(response, res, ac) {
    const headers = {};
    response.headers.forEach((v, k) => { headers[k] = v; });
    res.writeHead(response.status, headers);
    res.flushHeaders();
    if (!response.body) {
        res.end();
        return;
    }
    const reader = response.body.getReader();
    const gone = () => {
        if (!res.writableFinished) {
            ac.abort();
            reader.cancel().catch(() => {});
        }
    };
    res.on('close', gone);
    try {
        for (;;) {
            const { done, value } = await reader.read();
            if (done)
                break;
            res.write(value);
        }
    } catch {
        // client went away or the stream was torn down
    }
    await new Promise((resolve) => res.end(resolve));
}
