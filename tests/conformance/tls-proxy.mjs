// tls-proxy.mjs - a TLS-terminating reverse proxy for the conformance run.
//
// The conformance suite serves its scenario servers over plain http, and
// aurora-mcp's HTTP transport only speaks https.  This proxy listens on
// 127.0.0.1 with a throwaway certificate and forwards every request to the
// scenario server, streaming both ways: request and response bodies are
// piped chunk by chunk, so an SSE response reaches the client event by
// event, and a client that hangs up aborts the upstream request (which is
// how an MCP client cancels over HTTP).
//
// Usage: node tls-proxy.mjs --cert FILE --key FILE --target URL
//   Prints "PORT <n>" on stdout once listening, then serves until stdin
//   reaches EOF (its parent, the conformance driver, holds the other end).
//   The target must be a loopback http URL: nothing else is forwarded to.

import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:https';
import { parseArgs } from 'node:util';

// A hard bound, so a proxy can never outlive a run even if its parent's
// stdin pipe were somehow kept open.
const MAX_LIFETIME_MS = 10 * 60 * 1000;

// Hop-by-hop headers (RFC 9110 section 7.6.1) describe one connection, not
// the message; node frames bodies itself on each side.
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection',
                     'transfer-encoding', 'te', 'trailer', 'upgrade']);

function die(msg) {
    process.stderr.write(`tls-proxy: ${msg}\n`);
    process.exit(2);
}

const { values: opt } = parseArgs({
    options: {
        cert: { type: 'string' },
        key: { type: 'string' },
        target: { type: 'string' },
    },
});
if (!opt.cert || !opt.key || !opt.target)
    die('usage: tls-proxy.mjs --cert FILE --key FILE --target URL');

let target;
try {
    target = new URL(opt.target);
} catch {
    die('target is not a URL');
}
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
if (target.protocol !== 'http:' || !LOOPBACK.has(target.hostname))
    die('target must be an http URL on localhost, 127.0.0.1 or [::1]');
const targetPort = Number(target.port || 80);
const targetHost = target.hostname.replace(/^\[|\]$/g, '');

// Copies the end-to-end headers, keeping repeated ones (rawHeaders keeps
// the order and the original case).
function endToEnd(raw) {
    const out = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
        const name = raw[i].toLowerCase();
        if (HOP.has(name) || name === 'host')
            continue;
        out.push([raw[i], raw[i + 1]]);
    }
    return out;
}

function forward(req, res) {
    const headers = endToEnd(req.rawHeaders);
    headers.push(['Host', target.host]);
    const up = httpRequest({
        host: targetHost,
        port: targetPort,
        method: req.method,
        path: req.url,
        headers: headers.flat(),
        agent: false,
    });
    let answered = false;

    up.on('response', (ur) => {
        answered = true;
        const out = endToEnd(ur.rawHeaders);
        res.writeHead(ur.statusCode, ur.statusMessage, out.flat());
        // Send the status line and headers now: an SSE stream may not
        // carry its first event for a while.
        res.flushHeaders();
        ur.on('data', (chunk) => res.write(chunk));
        ur.on('end', () => res.end());
        // The scenario server broke the stream: break ours too rather than
        // ending it cleanly, so the client sees what really happened.
        ur.on('aborted', () => res.destroy());
        ur.on('error', () => res.destroy());
    });
    up.on('error', (e) => {
        if (answered) {
            res.destroy();
            return;
        }
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`tls-proxy: upstream failed: ${e.code || e.message}\n`);
    });
    // The client hung up before the exchange finished: cancel upstream.
    res.on('close', () => {
        if (!res.writableFinished)
            up.destroy();
    });
    req.pipe(up);
}

let tls;
try {
    tls = { cert: readFileSync(opt.cert), key: readFileSync(opt.key) };
} catch (e) {
    die(`cannot read certificate or key: ${e.message}`);
}
const server = createServer(tls, forward);
server.on('clientError', (_e, sock) => sock.destroy());
server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`PORT ${server.address().port}\n`);
});

function stop() {
    server.closeAllConnections();
    server.close();
    process.exit(0);
}
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
setTimeout(stop, MAX_LIFETIME_MS).unref();
