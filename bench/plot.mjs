#!/usr/bin/env node
// Draws bench/run.sh's growth rows as an SVG: wall time and peak RSS of
// the installed CLI's `discover` and of the raw floor against the number
// of Apps (1, 10, 100, 1000), both axes logarithmic, so a straight line of
// slope 1 is linear growth and a steeper one is worse.  A size that
// failed is drawn as a cross on the axis.  No dependencies.
// Peak RSS is each process's own (bench_measure's self_rss_kib, its
// VmHWM at exit), not its servers'.
// Usage: node plot.mjs RESULTS.jsonl [CPUS] > growth.svg

import { readFileSync } from 'node:fs';

const rows = readFileSync(process.argv[2], 'utf8').split('\n')
    .filter(Boolean).map((l) => JSON.parse(l))
    .filter((r) => /^growth-\d+$/.test(r.scen));

const median = (xs) => {
    const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
    if (!v.length) return NaN;
    const h = v.length >> 1;
    return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
};

// series[client][metric] = [[apps, value]...]; failed[client] = [apps]
const series = { cli: { wall: [], rss: [] }, raw: { wall: [], rss: [] } };
const failed = { cli: [], raw: [] };
const sizes = [...new Set(rows.map((r) => +r.scen.slice(7)))]
    .sort((a, b) => a - b);
for (const n of sizes)
    for (const c of ['cli', 'raw']) {
        const g = rows.filter((r) => r.scen === `growth-${n}` &&
                                     r.client === c);
        const ok = g.filter((r) => !r.failed);
        if (!ok.length) {
            if (g.length) failed[c].push(n);
            continue;
        }
        series[c].wall.push([n, median(ok.map((r) => r.measure.wall_ms))]);
        series[c].rss.push([n, median(ok.map((r) =>
            (r.measure.self_rss_kib > 0 ? r.measure.self_rss_kib
                                        : r.measure.tree_rss_kib) / 1024))]);
    }

const cpus = process.argv[3];
const W = 420, H = 300, M = { l: 60, r: 20, t: 30, b: 45 };
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

function panel(x0, title, unit, metric) {
    const pts = [...series.cli[metric], ...series.raw[metric]];
    const ys = pts.map((p) => p[1]).filter((v) => v > 0);
    const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...ys, 1))));
    const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...ys, 10))));
    const nx = Math.max(...sizes, 10);
    const X = (n) => x0 + M.l + (W - M.l - M.r) * Math.log10(n) /
        Math.log10(nx);
    const Y = (v) => M.t + (H - M.t - M.b) *
        (1 - (Math.log10(v) - Math.log10(lo)) /
             (Math.log10(hi) - Math.log10(lo)));
    const o = [];
    o.push(`<text x="${x0 + W / 2}" y="18" text-anchor="middle" ` +
           `font-weight="bold">${esc(title)}</text>`);
    o.push(`<line x1="${X(1)}" y1="${Y(lo)}" x2="${X(nx)}" y2="${Y(lo)}" ` +
           'stroke="#000"/>');
    o.push(`<line x1="${X(1)}" y1="${Y(lo)}" x2="${X(1)}" y2="${Y(hi)}" ` +
           'stroke="#000"/>');
    for (let d = 1; d <= nx; d *= 10)
        o.push(`<text x="${X(d)}" y="${H - M.b + 16}" ` +
               `text-anchor="middle">${d}</text>`);
    for (let v = lo; v <= hi; v *= 10) {
        o.push(`<line x1="${X(1)}" y1="${Y(v)}" x2="${X(nx)}" y2="${Y(v)}" ` +
               'stroke="#ddd"/>');
        o.push(`<text x="${X(1) - 6}" y="${Y(v) + 4}" ` +
               `text-anchor="end">${v}</text>`);
    }
    o.push(`<text x="${x0 + W / 2}" y="${H - 8}" text-anchor="middle">` +
           'Apps (log)</text>');
    o.push(`<text x="${x0 + 14}" y="${H / 2}" text-anchor="middle" ` +
           `transform="rotate(-90 ${x0 + 14} ${H / 2})">${esc(unit)} ` +
           '(log)</text>');
    const colour = { cli: '#c0392b', raw: '#2c3e50' };
    for (const c of ['cli', 'raw']) {
        const p = series[c][metric];
        if (p.length > 1)
            o.push(`<polyline fill="none" stroke="${colour[c]}" ` +
                   'stroke-width="2" points="' +
                   p.map(([n, v]) => `${X(n).toFixed(1)},` +
                         `${Y(v).toFixed(1)}`).join(' ') + '"/>');
        for (const [n, v] of p)
            o.push(`<circle cx="${X(n).toFixed(1)}" cy="${Y(v).toFixed(1)}" ` +
                   `r="3" fill="${colour[c]}"/>`);
        for (const n of failed[c])
            o.push(`<text x="${X(n)}" y="${Y(lo) - 4}" text-anchor="middle" ` +
                   `fill="${colour[c]}">× failed</text>`);
    }
    return o.join('\n');
}

const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" ` +
    `height="${H + 45}" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    panel(0, 'discover: wall time (whole process)', 'ms', 'wall'),
    panel(W, 'discover: own peak RSS', 'MiB', 'rss'),
    `<text x="${M.l}" y="${H + 20}" fill="#c0392b">● aurora-mcp ` +
    'discover (installed CLI, default plugins)</text>',
    `<text x="${W + M.l}" y="${H + 20}" fill="#2c3e50">● raw floor ` +
    '(same servers, no JSON parsing)</text>',
    `<text x="${M.l}" y="${H + 38}" fill="#777">log-log axes: slope 1 ` +
    `is linear growth; ${cpus ? 'every process pinned to CPU(s) ' +
    esc(cpus) : 'unpinned'}; medians</text>`,
    '</svg>',
];
process.stdout.write(svg.join('\n') + '\n');
