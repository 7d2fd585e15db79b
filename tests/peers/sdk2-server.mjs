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

import { serveStdio, StdioServerTransport }
    from '@modelcontextprotocol/server/stdio';

import { AfterResponse, buildTools, exitOnStdinEof, LoggingTransport,
         makeListPass, makeLogger, parseOptions } from './common.mjs';
import { makeSdk2Server } from './sdk2-common.mjs';

const EVENT_METHOD = 'notifications/org.aurorabot/world-events/event';

const opts = parseOptions(process.argv.slice(2),
                          { 'event': { type: 'string' } });
const eventParams = opts.parseJson('event', opts.raw['event']);
const log = makeLogger(opts);
const tools = buildTools(opts);
const after = new AfterResponse();

// Process-wide so a probe instance and the pinned instance share it.
const listPage = makeListPass(tools, opts, after);

function makeServer() {
    return makeSdk2Server({
        opts, tools, after, listPage,
        name: 'aurora-peer-sdk2',
        listChanged: (server) => server.sendToolListChanged(),
        onCall: (server, id) => {
            if (eventParams !== undefined)
                after.queue(id, () => server.notification(
                    { method: EVENT_METHOD, params: eventParams }));
        },
    });
}

const handle = serveStdio(() => makeServer(), {
    transport: new LoggingTransport(new StdioServerTransport(), log, after,
                         opts.wireReplace),
    onerror: (e) => process.stderr.write(`sdk2: ${e.message}\n`),
});

exitOnStdinEof(() => handle.close());
