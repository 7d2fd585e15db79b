#!/usr/bin/env node
// Real-peer stdio server on the official MCP TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0). serveStdio owns the era decision:
// a 2026-07-28 enveloped opening is served modern (subscriptions/listen is
// answered by the SDK's stdio listen router), an initialize is served legacy.
//
// Usage: node sdk2-server.mjs [--tools N] [--page-size M] [--log FILE]
//   [--log-all] [--extensions JSON] [--tool-meta JSON] [--name NAME]
//   [--instructions TEXT] [--change-after-list] [--change-during-list K]
//   [--change-on-call] [--exit-on-call] [--wire-replace JSON]
//   [--event JSON]
// See README.md for the exact semantics of each option.

import { ProtocolError, ProtocolErrorCode, Server }
    from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport }
    from '@modelcontextprotocol/server/stdio';

import { AfterResponse, buildTools, callTool, exitOnStdinEof,
         LoggingTransport, makeLogger, pageOf, parseOptions }
    from './common.mjs';

const EVENT_METHOD = 'notifications/org.aurorabot/world-events/event';

const opts = parseOptions(process.argv.slice(2),
                          { 'event': { type: 'string' } });
const eventParams = opts.parseJson('event', opts.raw['event']);
const log = makeLogger(opts);
const tools = buildTools(opts);
const after = new AfterResponse();

// Process-wide so a probe instance and the pinned instance share them.
const state = {
    firstPassDone: false,
    firstPassActive: false,
    changeAfterListSent: false,
    changeDuringListSent: false,
};

function capabilities() {
    const caps = { tools: { listChanged: true } };
    if (opts.extensions !== undefined)
        caps.extensions = opts.extensions;
    return caps;
}

function makeServer() {
    const server = new Server(
        { name: opts.name ?? 'aurora-peer-sdk2', version: '2.4.0-peer' },
        {
            capabilities: capabilities(),
            ...(opts.instructions !== undefined &&
                { instructions: opts.instructions }),
        });

    const listChanged = () => server.sendToolListChanged();

    server.setRequestHandler('tools/list', async (request, ctx) => {
        const cursor = request.params?.cursor;
        const page = pageOf(tools, opts.pageSize, cursor);
        if (page.error)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams,
                                    page.error);
        const id = ctx.mcpReq.id;
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
        const result = { tools: page.tools };
        if (page.nextCursor !== undefined)
            result.nextCursor = page.nextCursor;
        return result;
    });

    server.setRequestHandler('tools/call', async (request, ctx) => {
        if (opts.exitOnCall)
            process.exit(3);
        const { name, arguments: args } = request.params;
        const result = await callTool(tools, name, args);
        if (result.unknown)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams,
                                    `Tool ${name} not found`);
        const id = ctx.mcpReq.id;
        if (eventParams !== undefined)
            after.queue(id, () => server.notification(
                { method: EVENT_METHOD, params: eventParams }));
        if (opts.changeOnCall)
            after.queue(id, listChanged);
        const def = tools.find((t) => t.name === name);
        return server.projectCallToolResult(result, def?.outputSchema);
    });

    return server;
}

const handle = serveStdio(() => makeServer(), {
    transport: new LoggingTransport(new StdioServerTransport(), log, after,
                         opts.wireReplace),
    onerror: (e) => process.stderr.write(`sdk2: ${e.message}\n`),
});

exitOnStdinEof(() => handle.close());
