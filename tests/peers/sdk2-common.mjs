// The SDK v2 side (@modelcontextprotocol/server 2.4.0) shared by
// sdk2-server.mjs and sdk2-http-server.mjs: one low-level Server instance
// with the peers' tools/list and tools/call handlers.

import { ProtocolError, ProtocolErrorCode, Server }
    from '@modelcontextprotocol/server';

import { baseCapabilities, serverArgs, toolCall } from './common.mjs';

// A Server called name (unless --name) serving tools under opts.
// listPage is makeListPass's, shared by every instance of the process;
// listChanged(server) sends list_changed for this instance; onCall(server,
// id), if given, queues on after what follows a successful call, before
// --change-on-call's list_changed. Results are projected onto the tool's
// outputSchema as the SDK does.
export function makeSdk2Server({ opts, tools, after, listPage, name,
                                 listChanged, onCall }) {
    const server = new Server(...serverArgs(opts, name, '2.4.0-peer',
                                            baseCapabilities(opts)));
    const changed = () => listChanged(server);

    server.setRequestHandler('tools/list', async (request, ctx) => {
        const r = listPage(request.params?.cursor, ctx.mcpReq.id, changed);
        if (r.error)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, r.error);
        return r.result;
    });

    server.setRequestHandler('tools/call', async (request, ctx) => {
        const result = await toolCall(tools, opts, request.params);
        const toolName = request.params.name;
        if (result.unknown)
            throw new ProtocolError(ProtocolErrorCode.InvalidParams,
                                    `Tool ${toolName} not found`);
        const id = ctx.mcpReq.id;
        onCall?.(server, id);
        if (opts.changeOnCall)
            after.queue(id, changed);
        const def = tools.find((t) => t.name === toolName);
        return server.projectCallToolResult(result, def?.outputSchema);
    });

    return server;
}
