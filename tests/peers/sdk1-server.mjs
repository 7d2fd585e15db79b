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

import { AfterResponse, baseCapabilities, buildTools, exitOnStdinEof,
         LoggingTransport, makeListPass, makeLogger, parseOptions, serverArgs,
         toolCall } from './common.mjs';

const opts = parseOptions(process.argv.slice(2),
                          { 'legacy-event': { type: 'string' } });
const legacyEvent = opts.parseJson('legacy-event', opts.raw['legacy-event']);
const log = makeLogger(opts);
const tools = buildTools(opts);
const after = new AfterResponse();

const listPage = makeListPass(tools, opts, after);

const caps = baseCapabilities(opts,
                              legacyEvent !== undefined ? { logging: {} }
                                                        : {});

const server = new Server(...serverArgs(opts, 'aurora-peer-sdk1',
                                        '1.32.2-peer', caps));

const listChanged = () => server.sendToolListChanged();

server.setRequestHandler(ListToolsRequestSchema, async (request, extra) => {
    const r = listPage(request.params?.cursor, extra.requestId, listChanged);
    if (r.error)
        throw new McpError(ErrorCode.InvalidParams, r.error);
    return r.result;
});

server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const result = await toolCall(tools, opts, request.params);
    if (result.unknown)
        throw new McpError(ErrorCode.InvalidParams,
                           `Tool ${request.params.name} not found`);
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
