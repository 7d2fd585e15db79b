#!/usr/bin/env node
// Real MCP server on a Unix domain socket, for examples/transport-unix and
// tests/unix_transport_test.sh. Official SDK v1 (@modelcontextprotocol/sdk
// 1.32.2, legacy revisions via initialize): one McpServer per accepted
// connection, on the SDK's own StdioServerTransport handed the socket as
// both its readable and its writable stream, so the wire is exactly MCP
// stdio's (one JSON-RPC message per line).
//
// Usage: node unix-server.mjs [--silent-discover] SOCKET_PATH
// Prints "ready" on stdout once listening, then "connection N" as each
// connection is accepted. --silent-discover: never answer server/discover
// (as some legacy servers do), so the host must give up on the probe and
// start a fresh session for initialize. Removes a stale socket file
// first and its own on exit (SIGTERM or SIGINT).
// Tools: echo {text} -> text; add {a,b} -> text {"sum":N}. A connection
// that ends before its first message (a doctor probe) is simply forgotten.

import { existsSync, lstatSync, unlinkSync } from 'node:fs';
import net from 'node:net';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod/v4';

const args = process.argv.slice(2);
const silentDiscover = args[0] === '--silent-discover';
if (silentDiscover)
    args.shift();
const path = args[0];
if (!path || args.length !== 1 || path.startsWith('-')) {
    process.stderr.write('usage: unix-server.mjs [--silent-discover] SOCKET_PATH\n');
    process.exit(2);
}
if (existsSync(path)) {
    if (!lstatSync(path).isSocket()) {
        process.stderr.write(`unix-server: ${path} exists and is not a socket\n`);
        process.exit(2);
    }
    unlinkSync(path);
}

function makeServer() {
    const server = new McpServer({ name: 'aurora-peer-unix', version: '1.32.2-peer' });
    server.registerTool('echo', {
        description: 'Echo text back',
        inputSchema: { text: z.string() },
    }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerTool('add', {
        description: 'Add two numbers',
        inputSchema: { a: z.number(), b: z.number() },
    }, async ({ a, b }) => ({
        content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }],
    }));
    return server;
}

let connections = 0;
const sockets = new Set();
const listener = net.createServer((sock) => {
    const n = ++connections;
    const server = makeServer();
    sockets.add(sock);
    // The transport only reads and writes; the end of the socket is ours
    // to notice.
    const transport = new StdioServerTransport(sock, sock);
    const done = () => {
        if (!sockets.delete(sock))
            return;
        server.close().catch(() => {});
    };
    sock.on('error', (e) => {
        if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET')
            process.stderr.write(`unix-server: connection ${n}: ${e.message}\n`);
        done();
    });
    sock.on('end', done);
    sock.on('close', done);
    server.server.onerror = (e) =>
        process.stderr.write(`unix-server: connection ${n}: ${e.message}\n`);
    process.stdout.write(`connection ${n}\n`);
    server.connect(transport).then(() => {
        if (!silentDiscover)
            return;
        // Drop the probe before the SDK sees it (it would answer -32601).
        const deliver = transport.onmessage;
        transport.onmessage = (msg, extra) => {
            if (msg?.method !== 'server/discover')
                deliver?.(msg, extra);
        };
    }).catch((e) => {
        process.stderr.write(`unix-server: connect: ${e.message}\n`);
        sock.destroy();
    });
});

function shutdown(code) {
    for (const s of sockets)
        s.destroy();
    listener.close();
    try {
        unlinkSync(path);
    } catch {
        // already gone
    }
    process.exit(code);
}

listener.on('error', (e) => {
    process.stderr.write(`unix-server: ${e.message}\n`);
    process.exit(1);
});
listener.listen(path, () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => shutdown(0));
process.on('SIGINT', () => shutdown(0));
