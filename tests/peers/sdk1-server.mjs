#!/usr/bin/env node
// Real-peer stdio server on the official MCP TypeScript SDK v1
// (@modelcontextprotocol/sdk 1.32.2): legacy revisions only, negotiated by
// initialize. Same tools and most options as sdk2-server.mjs.
//
// Usage: node sdk1-server.mjs [--tools N] [--page-size M] [--log FILE]
//   [--log-all] [--extensions JSON] [--tool-meta JSON] [--name NAME]
//   [--instructions TEXT] [--change-after-list] [--change-during-list K]
//   [--change-on-call] [--exit-on-call] [--wire-replace JSON]
//   [--legacy-event JSON]
// See README.md for the exact semantics of each option.

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError }
    from '@modelcontextprotocol/sdk/types.js';

import { AfterResponse, buildTools, callTool, exitOnStdinEof,
         LoggingTransport, makeLogger, pageOf, parseOptions }
    from './common.mjs';

const opts = parseOptions(process.argv.slice(2),
                          { 'legacy-event': { type: 'string' } });
const legacyEvent = opts.parseJson('legacy-event', opts.raw['legacy-event']);
const log = makeLogger(opts);
const tools = buildTools(opts);
const after = new AfterResponse();

const state = {
    firstPassDone: false,
    firstPassActive: false,
    changeAfterListSent: false,
    changeDuringListSent: false,
};

const caps = { tools: { listChanged: true } };
if (legacyEvent !== undefined)
    caps.logging = {};
if (opts.extensions !== undefined)
    caps.extensions = opts.extensions;

const server = new Server(
    { name: opts.name ?? 'aurora-peer-sdk1', version: '1.32.2-peer' },
    {
        capabilities: caps,
        ...(opts.instructions !== undefined &&
            { instructions: opts.instructions }),
    });

const listChanged = () => server.sendToolListChanged();

server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    const cursor = request.params?.cursor;
    const page = pageOf(tools, opts.pageSize, cursor);
    if (page.error)
        throw new McpError(ErrorCode.InvalidParams, page.error);
    const id = extra.requestId;
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

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (opts.exitOnCall)
        process.exit(3);
    const { name, arguments: args } = request.params;
    const result = await callTool(tools, name, args);
    if (result.unknown)
        throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
    const id = extra.requestId;
    if (legacyEvent !== undefined)
        after.queue(id, () => server.notification({
            method: 'notifications/message',
            params: { level: 'info', logger: 'aurora/event',
                      data: legacyEvent },
        }));
    if (opts.changeOnCall)
        after.queue(id, listChanged);
    return result;
});

server.onerror = (e) => process.stderr.write(`sdk1: ${e.message}\n`);

await server.connect(
    new LoggingTransport(new StdioServerTransport(), log, after,
                         opts.wireReplace));

// The v1 stdio transport does not watch for stdin EOF itself.
exitOnStdinEof(() => server.close());
