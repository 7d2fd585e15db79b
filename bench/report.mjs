#!/usr/bin/env node
// Turns bench/run.sh's results.jsonl into the Markdown report: medians per
// (scenario, client, server) and ratios between clients of the same run.
// Usage: node report.mjs RESULTS.jsonl RUNS [CPUS [JOURNAL.md]]
// JOURNAL.md: bench/journal.sh's section (the world journal's throughput,
// issue #21), placed as it is after the growth table.

import { readFileSync } from 'node:fs';

const [file, runs, cpus, journalMd] = process.argv.slice(2);
const all = readFileSync(file, 'utf8').split('\n').filter(Boolean)
    .map((l) => JSON.parse(l));
// A case that failed (a growth size the host could not hold, a timeout)
// is kept as a failure to report.
const rows = all.filter((r) => !r.failed);
const failedRuns = all.filter((r) => r.failed);

const CLIENT = {
    capi: 'aurora C API (bench_host)',
    serve: 'aurora `serve` (JSON lines)',
    cli: 'aurora CLI `discover`, installed, default plugins',
    raw: 'raw floor (no JSON parsing)',
    relay: 'relay floor for serve (raw_floor -r)',
    rawh: 'raw HTTPS floor (libcurl, keep-alive, no JSON parsing)',
    sdk: 'TS SDK v2 client 2.4.0',
    bench_events: 'ext-world-events + SQLite journal',
};
const SERVER = { fixture: 'C fixture', sdk2: 'TS SDK v2',
                 sdk2h: 'TS SDK v2, HTTPS', journal: '-' };
const SCEN = (s) => {
    if (s === 'discover-1000') return 'startup + discovery, 1 App x 1000 tools (pages of 50)';
    if (s === 'start-20x100') return '20 Apps x 100 tools started together (RSS = holding them)';
    if (s === 'fixed-10') return 'fixed cost: connect + list 10 tools, 1 App';
    let g = /^growth-(\d+)$/.exec(s);
    if (g) return `growth: ${g[1]} instant App(s) x 100 tools`;
    let d = /^slowstart-(\d+)x100$/.exec(s);
    if (d) return `${d[1]} App(s) x 100 tools, each server idles 200 ms before it reads`;
    let m = /^seq-(\d+)$/.exec(s);
    if (m) return `${m[1]} sequential no-op calls`;
    m = /^conc-(\d+)x(\d+)$/.exec(s);
    if (m) return `${m[1]} no-op calls, ${m[2]} in flight`;
    m = /^events-(\d+)$/.exec(s);
    if (m) return `world-event ingestion, ${m[1]} new events`;
    return s;
};

const median = (xs) => {
    const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    if (!v.length) return NaN;
    const h = v.length >> 1;
    return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
};
const isCalls = (s) => /^(seq|conc|events)-/.test(s);
// The CLI prints no timing of its own: its wall is the whole process, and
// so is the raw floor's wherever the two are compared (proc).
const proc = (r) => r.measure.wall_ms;
const wall = (r) => r.client === 'cli' ? proc(r)
    : isCalls(r.scen) ? r.call_ms : r.start_ms;
// Own peak RSS of the measured process (VmHWM at its exit, from
// bench_measure), else the largest in its tree.
const selfRss = (r) => r.measure.self_rss_kib > 0 ? r.measure.self_rss_kib
    : r.measure.tree_rss_kib;
const rss = (r) => r.client === 'serve' || r.client === 'relay'
    ? r.child_rss_kib
    : r.client === 'bench_events' ? r.measure.tree_rss_kib
    : r.client === 'cli' ? selfRss(r) : r.rss_kib;

const groups = new Map();
for (const r of rows) {
    const k = `${r.scen}|${r.client}|${r.server}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
}
const stat = new Map();
for (const [k, g] of groups) {
    const [scen, client, server] = k.split('|');
    const w = median(g.map(wall));
    const calls = g[0].calls ?? 0;
    stat.set(k, {
        scen, client, server, n: g.length, wall: w,
        perOp: isCalls(scen) && calls ? (w * 1000) / calls : NaN,
        cpu: median(g.map((r) => r.measure.cpu_ms)),
        proc: median(g.map(proc)),
        rss: median(g.map(rss)),
        min: Math.min(...g.map(wall)), max: Math.max(...g.map(wall)),
        procMin: Math.min(...g.map(proc)),
        treeRss: median(g.map((r) => r.measure.tree_rss_kib)),
        selfRss: median(g.map(selfRss)),
        rows: g,
    });
    const s = stat.get(k);
    s.wallMin = s.min;
    s.perOpMin = isCalls(scen) && calls ? (s.min * 1000) / calls : NaN;
    s.rssMin = NaN;
}

const f0 = (x) => Number.isFinite(x) ? x.toFixed(0) : '-';
const f1 = (x) => Number.isFinite(x) ? x.toFixed(1) : '-';
const out = [];
out.push(`# aurora-mcp benchmarks`, '');
const reps = Math.max(1, ...all.map((r) => r.rep ?? 1));
out.push(`${new Date().toISOString()}, ${runs} round(s) of every case` +
         (reps > 1 ? `, the startup cases against the C fixture (fixed ` +
                     `cost, 1000 tools) ${reps} times a round` : '') +
         `, medians; ` +
         `node ${process.version}` +
         (cpus ? `; every process pinned to CPU(s) ${cpus} (--cpus)` : '') +
         '.', '');
out.push('| scenario | client | server | wall ms | (min-max) | µs/op | ' +
         'CPU ms (tree) | proc wall ms | RSS KiB (client) | runs |');
out.push('|---|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const s of stat.values())
    out.push(`| ${SCEN(s.scen)} | ${CLIENT[s.client] ?? s.client} | ` +
             `${SERVER[s.server] ?? s.server} | ${f1(s.wall)} | ` +
             `${f1(s.min)}-${f1(s.max)} | ${f1(s.perOp)} | ${f0(s.cpu)} | ` +
             `${f0(s.proc)} | ${f0(s.rss)} | ${s.n} |`);
// Cases with no successful run at all.
const failKeys = [...new Set(failedRuns.map((r) =>
    `${r.scen}|${r.client}|${r.server}`))].filter((k) => !stat.has(k));
for (const k of failKeys) {
    const [scen, client, server] = k.split('|');
    out.push(`| ${SCEN(scen)} | ${CLIENT[client] ?? client} | ` +
             `${SERVER[server] ?? server} | failed | | | | | | 0 |`);
}

const get = (scen, client, server = 'fixture') =>
    stat.get(`${scen}|${client}|${server}`);
const ratio = (a, b) => a && b && b > 0 ? (a / b).toFixed(2) + 'x' : '-';
// Two columns: the ratio of the medians, and of the fastest runs (the
// least disturbed by background load; RSS has no second column).
const r2 = (a, b, f) => `${ratio(a?.[f], b?.[f])} | ` +
    (f === 'rss' ? '-' : ratio(a?.[f + 'Min'], b?.[f + 'Min']));
const lines = [];
for (const s of stat.values()) {
    if (!/^(seq|conc)-/.test(s.scen) || s.client !== 'raw') continue;
    const c = get(s.scen, 'capi', s.server), v = get(s.scen, 'serve', s.server);
    const k = get(s.scen, 'sdk', s.server), y = get(s.scen, 'relay', s.server);
    const tag = `${SCEN(s.scen)}, ${SERVER[s.server]} server`;
    lines.push(`| per-call cost, ${tag} | C API / raw floor | ` +
               `${r2(c, s, 'perOp')} |`);
    if (v && y) lines.push(`| per-call cost, ${tag} | serve / relay floor | ` +
                           `${r2(v, y, 'perOp')} |`);
    if (v) lines.push(`| per-call cost, ${tag} | serve / raw floor | ` +
                      `${r2(v, s, 'perOp')} |`);
    // The SDK client is not run with 16 in flight.
    if (k) lines.push(`| per-call cost, ${tag} | SDK client / raw floor | ` +
                      `${r2(k, s, 'perOp')} |`);
    if (k) lines.push(`| throughput, ${tag} | C API / SDK client (calls/s) | ` +
                      `${r2(k, c, 'perOp')} |`);
    if (v && k) lines.push(`| throughput, ${tag} | serve / SDK client (calls/s) | ` +
                      `${r2(k, v, 'perOp')} |`);
}
for (const scen of [...new Set([...stat.values()].map((x) => x.scen))]) {
    const c = get(scen, 'capi', 'sdk2h'), k = get(scen, 'sdk', 'sdk2h');
    if (!c || !k)
        continue;
    const tag = `${SCEN(scen)}, HTTPS (Streamable HTTP, keep-alive), ` +
        'TS SDK v2 server';
    const rh = get(scen, 'rawh', 'sdk2h');
    if (isCalls(scen) && rh)
        lines.push(`| per-call cost, ${tag} | C API / raw HTTPS floor | ` +
                   `${r2(c, rh, 'perOp')} |`);
    if (isCalls(scen))
        lines.push(`| throughput, ${tag} | C API / SDK client (calls/s) | ` +
                   `${r2(k, c, 'perOp')} |`);
    else
        lines.push(`| ${tag} | SDK client / C API (wall) | ` +
                   `${r2(k, c, 'wall')} |`);
    lines.push(`| peak RSS, ${tag} | SDK client / C API | ` +
               `${r2(k, c, 'rss')} |`);
}
for (const server of ['fixture', 'sdk2']) {
    const r = get('discover-1000', 'raw', server);
    if (!r) continue;
    const tag = `startup + discovery 1000 tools, ${SERVER[server]} server`;
    lines.push(`| ${tag} | C API / raw floor (wall) | ` +
               `${r2(get('discover-1000', 'capi', server), r, 'wall')} |`);
    const c = get('discover-1000', 'capi', server);
    if (c)
        lines.push(`| ${tag} | C API minus raw floor (wall ms) | ` +
                   `${f1(c.wall - r.wall)} | ${f1(c.wallMin - r.wallMin)} |`);
    lines.push(`| ${tag} | SDK client / C API (wall) | ` + r2(
        get('discover-1000', 'sdk', server),
        get('discover-1000', 'capi', server), 'wall') + ' |');
}
for (const c of ['capi', 'serve', 'raw', 'sdk']) {
    const one = get('slowstart-1x100', c), many = get('slowstart-20x100', c);
    if (one && many)
        lines.push(`| slow servers (200 ms idle start), start wall | ` +
                   `20 Apps / 1 App, ${CLIENT[c]} | ${r2(many, one, 'wall')} |`);
}
const h = (c) => get('start-20x100', c);
if (h('capi')) {
    lines.push(`| 20 Apps x 100 tools, start wall | C API / raw floor | ` +
               `${r2(h('capi'), h('raw'), 'wall')} |`);
    lines.push(`| 20 Apps x 100 tools, start wall | SDK client / C API | ` +
               `${r2(h('sdk'), h('capi'), 'wall')} |`);
    lines.push(`| 20 Apps x 100 tools, peak RSS | SDK client / C API | ` +
               `${r2(h('sdk'), h('capi'), 'rss')} |`);
    lines.push(`| 20 Apps x 100 tools, peak RSS | SDK client / serve | ` +
               `${r2(h('sdk'), h('serve'), 'rss')} |`);
}
// ---- Issue #20's targets, each a ratio in this run -------------------
const T = [];
const fmt = (x, d = 2) => Number.isFinite(x) ? x.toFixed(d) : '-';
// ok: true/false, or undefined when this run has no figure for it.
const target = (what, figure, limit, ok) =>
    T.push(`| ${what} | ${figure} | ${limit} | ` +
           `${ok === undefined ? 'not measured' : ok ? 'met' : '**not met**'} |`);
const q = (a, b) => a && b && b > 0 ? a / b : NaN;
// A target's ratio round by round (and repetition by repetition for the
// cases run.sh repeats in a round): it interleaves the cases, so the
// runs of one round saw the same load.  Its range shows how far one
// round's noise moves a figure that sits near its limit; the verdict is
// the medians'.
const ROW = {
    proc, wall, selfRss, rss,
    perOp: (r) => r.calls ? (wall(r) * 1000) / r.calls : NaN,
};
const rounds = (a, fa, b, fb) => {
    if (!a || !b) return '';
    const at = (r) => `${r.run}.${r.rep ?? 1}`;
    const by = new Map(b.rows.map((r) => [at(r), ROW[fb](r)]));
    const xs = a.rows.map((r) => ROW[fa](r) / by.get(at(r)))
        .filter((v) => Number.isFinite(v) && v > 0);
    return xs.length < 2 ? ''
        : `; rounds ${fmt(Math.min(...xs))}x to ${fmt(Math.max(...xs))}x`;
};
// a's metric fa over b's fb (ROW keys, and the stat fields of their
// medians): the ratio x of the medians and its figure, with its rounds.
// d: decimals of the medians, xd of the ratio.
const vs = (a, fa, b, fb, unit, d = 1, xd = 2) => {
    const x = q(a?.[fa], b?.[fb]);
    return { x, fig: `${fmt(a?.[fa], d)} / ${fmt(b?.[fb], d)} ${unit} = ` +
                     `${fmt(x, xd)}x${rounds(a, fa, b, fb)}` };
};
const judge = (x, pass) => Number.isFinite(x) ? pass(x) : undefined;
const goal = (what, v, limit, pass) =>
    target(what, v.fig, limit, judge(v.x, pass));
{
    const c = get('discover-1000', 'cli'), r = get('discover-1000', 'raw');
    const a = get('discover-1000', 'capi');
    goal('startup + discover, 1 App x 1000 tools: CLI / raw floor (whole process)',
       vs(c, 'proc', r, 'proc', 'ms'), '≤ 2.5x', (v) => v <= 2.5);
    goal('... C API / raw floor (start phase)',
       vs(a, 'wall', r, 'wall', 'ms'), '≤ 1.5x', (v) => v <= 1.5);
    const c20 = get('start-20x100', 'cli'), r20 = get('start-20x100', 'raw');
    goal('20 Apps x 100 tools: CLI / raw floor (whole process)',
       vs(c20, 'proc', r20, 'proc', 'ms'), '≤ 2.5x', (v) => v <= 2.5);
    const cf = get('fixed-10', 'cli'), rf = get('fixed-10', 'raw');
    goal('fixed cost (connect + list 10 tools): CLI / raw floor (whole process)',
       vs(cf, 'proc', rf, 'proc', 'ms'), '≤ 2x', (v) => v <= 2);
    goal('... C API / raw floor (start phase)',
       vs(get('fixed-10', 'capi'), 'wall', rf, 'wall', 'ms'), '(≤ 2x)',
       (v) => v <= 2);
    const h = get('start-20x100', 'capi'), k = get('start-20x100', 'sdk');
    // Own peak RSS of each process (the CLI's VmHWM at exit, the raw
    // floor's): never a server's.
    goal('peak RSS holding 20 Apps x 100 tools: CLI / raw floor (own process)',
       vs(c20, 'selfRss', r20, 'selfRss', 'KiB', 0), '≤ 2.5x', (v) => v <= 2.5);
    goal('... C API / raw floor', vs(h, 'rss', r20, 'rss', 'KiB', 0),
       '(≤ 2.5x)', (v) => v <= 2.5);
    goal('... TS SDK v2 client / CLI', vs(k, 'rss', c20, 'selfRss', 'KiB', 0, 1),
       '≥ 10x', (v) => v >= 10);
    goal('... TS SDK v2 client / C API', vs(k, 'rss', h, 'rss', 'KiB', 0, 1),
       '(≥ 10x)', (v) => v >= 10);
    const sv = [...stat.values()].find((v) => /^seq-/.test(v.scen) &&
                                            v.client === 'serve' && v.server === 'fixture');
    const pinned = cpus ? `pinned to ${cpus}` : 'unpinned: the limit is for a pinned run';
    goal(`\`serve\` per call, sequential: serve / relay floor (${pinned})`,
       vs(sv, 'perOp', sv && get(sv.scen, 'relay'), 'perOp', 'µs'), '≤ 1.1x',
       (v) => v <= 1.1);
    for (const v of stat.values()) {
        const m = /^conc-(\d+)x(\d+)$/.exec(v.scen);
        if (!m || v.client !== 'serve' || v.server !== 'fixture') continue;
        goal(`\`serve\` per call, ${m[2]} in flight: serve / relay floor (${pinned})`,
           vs(v, 'perOp', get(v.scen, 'relay'), 'perOp', 'µs'), '≤ 1.3x',
           (x) => x <= 1.3);
    }
    for (const c2 of ['cli', 'capi', 'serve']) {
        goal(`20 slow-starting Apps / 1, ${CLIENT[c2]}` +
           (c2 === 'cli' ? ' (whole process)' : ' (start phase)'),
           vs(get('slowstart-20x100', c2), 'wall', get('slowstart-1x100', c2),
              'wall', 'ms'),
           c2 === 'cli' ? '≤ 1.2x' : '(≤ 1.2x)', (v) => v <= 1.2);
    }
    const ev = [...stat.values()].find((v) => /^events-/.test(v.scen));
    if (ev) {
        const n = +ev.scen.slice(7), rate = n / (ev.wall / 1000);
        target('world events committed idempotently (SQLite journal)',
               `${fmt(rate, 0)} / s`, '≥ 200 000 / s', rate >= 200000);
    }
    const hc = [...stat.values()].find((v) => /^seq-/.test(v.scen) &&
                                               v.server === 'sdk2h' && v.client === 'capi');
    goal('HTTPS keep-alive, one call (sequential): C API / raw C HTTPS client',
       vs(hc, 'perOp', hc && get(hc.scen, 'rawh', 'sdk2h'), 'perOp', 'µs', 0),
       '≤ 1.3x', (v) => v <= 1.3);
    const g100 = get('growth-100', 'cli');
    target('100 Apps x 100 tools: CLI start (whole process), absolute',
           `${fmt(g100?.proc, 0)} ms`, '< 1000 ms',
           judge(g100?.proc, (v) => v < 1000));
    target('100 Apps x 100 tools: CLI peak RSS (own process), absolute',
           `${fmt((g100?.selfRss ?? NaN) / 1024, 1)} MiB`, '< 64 MiB',
           judge(g100?.selfRss, (v) => v < 64 * 1024));
}
if (T.length) {
    out.push('', '## Targets (issue #20), from this run', '',
             '| target | figure | limit | |', '|---|---|---|---|', ...T);
}

// ---- Issue #22's targets: a thousand Apps -----------------------------
const T22 = [];
{
    const gs = [...stat.values()].filter((v) => /^growth-\d+$/.test(v.scen) &&
                                              v.client === 'cli')
        .map((v) => +v.scen.slice(7)).sort((a, b) => a - b);
    const cli = (n) => get(`growth-${n}`, 'cli'), raw = (n) => get(`growth-${n}`, 'raw');
    const t = (what, fig, lim, ok) =>
        T22.push(`| ${what} | ${fig} | ${lim} | ${ok === undefined ? '-' : ok ? 'met' : '**not met**'} |`);
    const big = gs.length ? gs[gs.length - 1] : undefined;
    if (big !== undefined) {
        const x = q(cli(big)?.proc, raw(big)?.proc);
        t(`${big} Apps: CLI wall / raw floor (whole process)`,
          `${fmt(cli(big)?.proc, 0)} / ${fmt(raw(big)?.proc, 0)} ms = ${fmt(x)}x`,
          '≤ 3x', judge(x, (v) => v <= 3));
        const lim = 32 * 1024 + 96 * big, rss = cli(big)?.selfRss;
        t(`${big} Apps: CLI peak RSS (own process)`,
          `${fmt((rss ?? NaN) / 1024, 1)} MiB`,
          `≤ 32 MiB + 96 KiB x ${big} = ${fmt(lim / 1024, 1)} MiB`,
          judge(rss, (v) => v <= lim));
    }
    const at10 = cli(10) ? cli(10).proc / 10 : undefined;
    for (const n of gs.filter((n) => n > 10)) {
        const x = q(cli(n).proc / n, at10);
        t(`time per App at ${n} Apps / at 10 Apps`,
          `${fmt(cli(n).proc / n, 2)} / ${fmt(at10, 2)} ms = ${fmt(x)}x`,
          '≤ 1.5x', judge(x, (v) => v <= 1.5));
    }
    const failedSizes = [...new Set(failedRuns.filter((r) => r.client === 'cli' &&
        /^growth-\d+$/.test(r.scen) && !get(r.scen, 'cli')).map((r) => r.scen.slice(7)))];
    if (failedSizes.length)
        t('growth sizes that failed', failedSizes.join(', '), 'none', false);
}
if (T22.length) {
    out.push('', '## Targets (issue #22), from this run', '',
             '| target | figure | limit | |', '|---|---|---|---|', ...T22);
}

// ---- Growth: time and memory against the number of Apps -------------
const G = [...stat.values()].filter((v) => /^growth-\d+$/.test(v.scen))
    .map((v) => +v.scen.slice(7)).filter((n, i, a) => a.indexOf(n) === i)
    .sort((a, b) => a - b);
if (G.length || failedRuns.some((r) => /^growth-/.test(r.scen))) {
    out.push('', '## Growth (instant Apps of 100 tools in pages of 50; whole process, own peak RSS)', '',
             '| Apps | CLI wall ms | per App | CLI peak RSS KiB | per App | ' +
             'raw wall ms | per App | raw peak RSS KiB | per App | CLI / raw wall | CLI / raw RSS |',
             '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const ns = [...new Set([...G, ...failedRuns.filter((r) => /^growth-\d+$/.test(r.scen))
        .map((r) => +r.scen.slice(7))])].sort((a, b) => a - b);
    const fl = (n, c) => failedRuns.some((f) => f.scen === `growth-${n}` && f.client === c)
        ? 'failed' : '-';
    for (const n of ns) {
        const c = get(`growth-${n}`, 'cli'), r = get(`growth-${n}`, 'raw');
        const cols = (v, cl) => v
            ? [fmt(v.proc, 1), fmt(v.proc / n, 2), fmt(v.selfRss, 0), fmt(v.selfRss / n, 0)]
            : [fl(n, cl), '', fl(n, cl), ''];
        out.push(`| ${n} | ${cols(c, 'cli').join(' | ')} | ${cols(r, 'raw').join(' | ')} | ` +
                 `${c && r ? fmt(q(c.proc, r.proc)) + 'x' : '-'} | ` +
                 `${c && r ? fmt(q(c.selfRss, r.selfRss)) + 'x' : '-'} |`);
    }
}

// ---- Issue #21: the world journal's throughput (bench/journal.sh) ------
if (journalMd) {
    const text = readFileSync(journalMd, 'utf8').trim();
    if (text) out.push('', ...text.split('\n'));
}

if (lines.length) {
    out.push('', '## Ratios (same run; > 1 means the first is slower / ' +
             'bigger, except throughput where > 1 means the first is faster)',
             '');
    out.push('| what | ratio of | medians | fastest runs |',
             '|---|---|---:|---:|', ...lines);
}
out.push('', 'wall ms: the measured phase as the client times it (startup ' +
         'rows: spawn to catalog complete; call rows: first call sent to ' +
         'last reply; events: the new-event pass). CPU ms: user+system of ' +
         'the whole process tree (client and servers) over the whole ' +
         'process lifetime, from wait4. proc wall ms: the whole process, ' +
         'from bench_measure; the CLI rows and every CLI / raw ratio ' +
         'use it for both sides. RSS: the client process alone ' +
         '(getrusage / process.resourceUsage / VmHWM of `aurora-mcp serve`; ' +
         'the CLI: its own VmHWM at exit, from bench_measure).');
process.stdout.write(out.join('\n') + '\n');
