#!/usr/bin/env node
// Real-peer Streamable HTTP server on the official MCP TypeScript SDK v1
// (@modelcontextprotocol/sdk 1.32.2, StreamableHTTPServerTransport):
// legacy revisions only, stateful (one Server + transport per session,
// Mcp-Session-Id from initialize). Served with node:https on 127.0.0.1;
// prints "PORT <n>" once listening; exits on stdin EOF.
//
// Usage: node sdk1-http-server.mjs --cert PEM --key PEM [--tools N]
//   [--page-size M] [--log FILE] [--extensions JSON] [--tool-meta JSON]
//   [--name NAME] [--instructions TEXT] [--change-on-call]
//   [--exit-on-call] [--require-bearer TOKEN] [--initialized-delay MS]
//   [--change-during-list K] [--change-after-list] [--get-delay MS]
// Routing: a known Mcp-Session-Id goes to its session; an unknown one gets
// 404 (JSON-RPC -32001); a POST without one goes to a fresh transport, so
// the SDK itself answers initialize (new session) or rejects anything else
// (400 "Server not initialized"). --change-on-call sends list_changed on
// the session's standalone GET stream after the call's response.
// --initialized-delay holds the 202 to notifications/initialized for MS
// milliseconds; with --log, every notification and GET gets a "done" line
// as its answer starts, so a test sees whether anything overtook the
// handshake's end, and when the standalone stream is in place.
// --change-during-list / --change-after-list send list_changed on the
// session's standalone GET stream after page K / the last page of the
// first pass (the SDK drops it when no GET stream is open yet), and
// --get-delay holds every GET for MS milliseconds before the SDK sees it,
// so a client that lists before its GET stream is up misses the change.

import { randomUUID } from 'node:crypto';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport }
    from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }
    from '@modelcontextprotocol/sdk/types.js';

import { AfterResponse, baseCapabilities, buildTools, makeListPass,
         parseOptions, serverArgs, toolCall } from './common.mjs';
import { HTTP_OPTIONS, logDoneLine, serveMcpHttps } from './http-common.mjs';

const opts = parseOptions(process.argv.slice(2),
                          { ...HTTP_OPTIONS,
                            'initialized-delay': { type: 'string' },
                            'get-delay': { type: 'string' } });
function delayOpt(name) {
    const v = Number(opts.raw[name] ?? 0);
    if (!Number.isInteger(v) || v < 0 || v > 60000) {
        process.stderr.write(`peer: --${name}: 0..60000\n`);
        process.exit(2);
    }
    return v;
}
const initDelay = delayOpt('initialized-delay');
const getDelay = delayOpt('get-delay');
const tools = buildTools(opts);
const sessions = new Map();   // session id -> { transport, after }

const caps = baseCapabilities(opts);

function makeServer(after) {
    const server = new Server(...serverArgs(opts, 'aurora-peer-sdk1-http',
                                            '1.32.2-peer', caps));
    const listPage = makeListPass(tools, opts, after);
    const listChanged = () => server.sendToolListChanged();

    server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
        const r = listPage(request.params?.cursor, extra.requestId,
                           listChanged);
        if (r.error)
            throw new McpError(ErrorCode.InvalidParams, r.error);
        return r.result;
    });

    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const result = await toolCall(tools, opts, request.params);
        if (result.unknown)
            throw new McpError(ErrorCode.InvalidParams,
                               `Tool ${request.params.name} not found`);
        if (opts.changeOnCall)
            after.queue(extra.requestId, () => server.sendToolListChanged());
        return result;
    });

    server.onerror = (e) => process.stderr.write(`sdk1-http: ${e.message}\n`);
    return server;
}

// The "done" line is written synchronously before the status line goes
// out ('finish' fires too late: a client's next request can be logged
// first), so nothing the client sends after the answer precedes it.
// For GET the line also means the SDK has registered the standalone
// stream (it does so before the response headers are written).
function logBeforeAnswer(res, what) {
    const writeHead = res.writeHead;
    res.writeHead = function (status, ...rest) {
        res.writeHead = writeHead;
        logDoneLine(opts.log, what, status);
        return writeHead.call(this, status, ...rest);
    };
}

async function freshSession() {
    const after = new AfterResponse();
    const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
            sessions.set(sid, { transport, after });
        },
    });
    transport.onclose = () => {
        if (transport.sessionId)
            sessions.delete(transport.sessionId);
    };
    await makeServer(after).connect(transport);
    return { transport, after };
}

serveMcpHttps(opts, async (req, res, body, msg) => {
    const sid = req.headers['mcp-session-id'];
    let entry;
    if (sid !== undefined) {
        entry = sessions.get(sid);
        if (!entry) {
            res.writeHead(404, { 'content-type': 'application/json' });
            res.end(JSON.stringify({
                jsonrpc: '2.0', id: null,
                error: { code: -32001, message: 'Session not found' } }));
            return;
        }
    } else if (req.method === 'POST') {
        entry = await freshSession();
    } else {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
            jsonrpc: '2.0', id: null,
            error: { code: -32000,
                     message: 'Bad Request: No valid session ID provided' },
        }));
        return;
    }
    if (msg && typeof msg === 'object' && msg.id !== undefined)
        res.on('finish', () => entry.after.sent({ id: msg.id, result: {} }));
    else if (msg && typeof msg === 'object' && typeof msg.method === 'string')
        logBeforeAnswer(res, msg.method);
    else if (req.method === 'GET')
        logBeforeAnswer(res, 'GET');
    if (initDelay > 0 && msg?.method === 'notifications/initialized')
        await new Promise((r) => setTimeout(r, initDelay));
    if (getDelay > 0 && req.method === 'GET')
        await new Promise((r) => setTimeout(r, getDelay));
    await entry.transport.handleRequest(req, res, msg ?? undefined);
    // A sessionless POST that did not open a session leaves nothing behind.
    if (sid === undefined && !entry.transport.sessionId)
        await entry.transport.close();
});
