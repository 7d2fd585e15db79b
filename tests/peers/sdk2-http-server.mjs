#!/usr/bin/env node
// Real-peer Streamable HTTP server on the official MCP TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0, createMcpHandler): 2026-07-28
// (modern, per-request instances, subscriptions/listen over SSE) and the
// SDK's stateless legacy fallback. Served with node:https on 127.0.0.1;
// prints "PORT <n>" once listening; exits on stdin EOF.
//
// Usage: node sdk2-http-server.mjs --cert PEM --key PEM [--tools N]
//   [--page-size M] [--log FILE] [--extensions JSON] [--tool-meta JSON]
//   [--name NAME] [--instructions TEXT] [--change-after-list]
//   [--change-during-list K] [--change-on-call] [--exit-on-call]
//   [--require-bearer TOKEN] [--status-for METHOD=CODE]
//   [--fault-for METHOD=reset|truncate|stall]
// --log writes one line per HTTP request (see http-common.mjs); the
// list_changed options publish on the handler's listen bus, so they reach
// open subscriptions/listen streams only.

import { createMcpHandler } from '@modelcontextprotocol/server';

import { AfterResponse, buildTools, makeListPass, parseOptions }
    from './common.mjs';
import { HTTP_OPTIONS, sendWebResponse, serveMcpHttps }
    from './http-common.mjs';
import { makeSdk2Server } from './sdk2-common.mjs';

const opts = parseOptions(process.argv.slice(2), {
    ...HTTP_OPTIONS,
    // --status-for METHOD=CODE: answer that JSON-RPC method with this bare
    // HTTP status and a text body (no JSON-RPC), e.g. tools/call=503.
    'status-for': { type: 'string', multiple: true },
    // --fault-for METHOD=reset|truncate|stall: break the exchange of that
    // JSON-RPC method: destroy the connection without an answer, end an
    // SSE stream in the middle of the response event, or open the stream
    // and never write to it.
    'fault-for': { type: 'string', multiple: true },
});
const statusFor = new Map((opts.raw['status-for'] ?? []).map((s) => {
    const i = s.lastIndexOf('=');
    return [s.slice(0, i), Number(s.slice(i + 1))];
}));
const faultFor = new Map((opts.raw['fault-for'] ?? []).map((s) => {
    const i = s.lastIndexOf('=');
    return [s.slice(0, i), s.slice(i + 1)];
}));
const tools = buildTools(opts);
const after = new AfterResponse();

const listPage = makeListPass(tools, opts, after);

// Declared before use by the factory; assigned once createMcpHandler ran.
// list_changed goes out on the handler's listen bus, whichever instance
// asks.
let handler;

function makeServer() {
    return makeSdk2Server({
        opts, tools, after, listPage,
        name: 'aurora-peer-sdk2-http',
        listChanged: () => handler.notify.toolsChanged(),
    });
}

handler = createMcpHandler(() => makeServer(), {
    onerror: (e) => process.stderr.write(`sdk2-http: ${e.message}\n`),
});

serveMcpHttps(opts, async (req, res, body, msg) => {
    if (msg && statusFor.has(msg.method)) {
        res.writeHead(statusFor.get(msg.method), { 'content-type': 'text/plain' });
        res.end('injected failure\n');
        return;
    }
    if (msg && faultFor.has(msg.method)) {
        const fault = faultFor.get(msg.method);
        if (fault === 'reset') {
            req.socket.destroy();
            return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        if (fault === 'truncate')
            res.end(`data: {"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"res`);
        // stall: the stream stays open and silent until the client leaves
        return;
    }
    const ac = new AbortController();
    const request = new Request(`https://127.0.0.1${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([k, v]) =>
            Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]]),
        body: body && body.length ? body : undefined,
        signal: ac.signal,
    });
    const response = await handler.fetch(request);
    await sendWebResponse(response, res, ac);
    // Follow-ups (list_changed) run once the exchange they belong to is
    // fully written, so they provably come after the response.
    if (msg && typeof msg === 'object' && msg.id !== undefined)
        after.sent({ id: msg.id, result: {} });
});
