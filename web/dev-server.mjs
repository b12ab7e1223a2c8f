#!/usr/bin/env node
// Development only: serves a build output directory the way `tailguard serve` does (/ and
// /assets/*) and proxies everything else (/api, /metrics, ...) to a running tailguard.
//   node web/build.mjs --outdir /tmp/tg-web-out --dev
//   node web/dev-server.mjs --dir /tmp/tg-web-out --target 127.0.0.1:8080 [--listen 127.0.0.1:5173] [--mock]
// --mock answers the dashboard endpoints an older tailguard lacks (heatmap, silences, info,
// episodes, forecast) with made-up data derived from the real series, to work on the page.
import { createServer, request } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join, extname } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const dir = opt('--dir', 'build/web-dev');
const [thost, tport] = opt('--target', '127.0.0.1:8080').split(':');
const [lhost, lport] = opt('--listen', '127.0.0.1:5173').split(':');
const mock = args.includes('--mock');
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

function upstream(method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request({ host: thost, port: Number(tport), method, path, headers: { ...headers, host: `${thost}:${tport}` } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const silences = [];
let nextSilence = 1;
const acks = new Map();

function json(res, status, obj) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

async function mockAnswer(req, url, body, real) {
  const p = url.pathname;
  if (p === '/api/v1/info' && real.status === 404) {
    return { version: 'dev', now: new Date().toISOString(), tick_seconds: 1, token_required: true, store: true };
  }
  const hm = /^\/api\/v1\/series\/([^/]+)\/heatmap$/.exec(p);
  if (hm && real.status >= 400) {
    const q = url.searchParams;
    const hist = await upstream('GET', `/api/v1/series/${hm[1]}/history?${q}`, {}, undefined);
    const points = JSON.parse(hist.body).points || [];
    const per = 4;
    const bucket = (s) => Math.floor(Math.log2(s / 1e-6) * per);
    const cells = [];
    let lo = Infinity, hi = -Infinity;
    const raw = [];
    points.forEach((pt, c) => {
      if (!pt.count) return;
      const qs = [[pt.p50, 0.5], [pt.p90, 0.4], [pt.p99, 0.09], [pt.p999, 0.01]];
      for (const [v, share] of qs) {
        if (!v) continue;
        const b = bucket(v);
        lo = Math.min(lo, b - 1); hi = Math.max(hi, b + 1);
        raw.push([c, b, Math.max(1, Math.round(pt.count * share))]);
        raw.push([c, b - 1, Math.max(1, Math.round(pt.count * share * 0.3))]);
      }
    });
    for (const [c, b, n] of raw) cells.push([c, b - lo, n]);
    const bounds = [];
    for (let b = lo; b <= hi + 1; b++) bounds.push(1e-6 * Math.pow(2, b / per));
    return { series: '', step_seconds: 0, bounds, times: points.map((x) => x.time), cells };
  }
  const hi = /^\/api\/v1\/series\/([^/]+)\/history$/.exec(p);
  if (hi && real.status === 200) {
    const data = JSON.parse(real.body);
    if (data.points?.length && !('forecast' in data.points[0])) {
      for (const pt of data.points) {
        if (pt.baseline_p99 === null) continue;
        pt.forecast = pt.baseline_p99;
        pt.forecast_lower = pt.baseline_p99 * 0.8;
        pt.forecast_upper = pt.baseline_p99 * 1.25;
      }
      return data;
    }
  }
  if (p === '/api/v1/alerts' && real.status === 200) {
    const data = JSON.parse(real.body);
    if (!data.episodes) {
      const ev = JSON.parse((await upstream('GET', '/api/v1/events?limit=1000', {}, undefined)).body).events || [];
      data.episodes = ev.filter((e) => e.type === 'alert' && e.kind === 'fire').reverse().map((e) => ({
        id: e.id, rule: e.rule, series: e.series, series_id: e.series_id, severity: e.severity, tier: 0,
        state: data.alerts.some((a) => a.series_id === e.series_id && a.rule === e.rule) ? 'alert' : 'resolved',
        value: e.value, threshold: e.threshold, baseline_p99: e.baseline_p99, started_at: e.time, fired_at: e.time,
        ended_at: null, ...(acks.get(e.id) || { acked_by: null, acked_at: null, ack_comment: '' }),
      }));
    }
    return data;
  }
  const auth = req.headers.authorization === 'Bearer devtoken';
  const ack = /^\/api\/v1\/alerts\/(\d+)\/ack$/.exec(p);
  if (ack && real.status === 404) {
    if (!auth) return [401, { error: { code: 'unauthorized', message: 'acknowledging an alert needs the API token (dev mock: devtoken)' } }];
    const b = JSON.parse(body || '{}');
    acks.set(Number(ack[1]), { acked_by: b.by, acked_at: new Date().toISOString(), ack_comment: b.comment || '' });
    return { alert: { id: Number(ack[1]) } };
  }
  if (p.startsWith('/api/v1/silences') && real.status === 404) {
    if (req.method === 'GET') return { silences: silences.filter((s) => url.searchParams.get('expired') === 'true' || s.active) };
    if (!auth) return [401, { error: { code: 'unauthorized', message: 'needs the API token (dev mock: devtoken)' } }];
    if (req.method === 'POST') {
      const b = JSON.parse(body || '{}');
      const s = { id: nextSilence++, matchers: b.matchers, starts_at: new Date().toISOString(), ends_at: new Date(Date.now() + 3600e3).toISOString(), created_by: b.created_by, comment: b.comment, active: true };
      silences.push(s);
      return [201, { silence: s }];
    }
    const id = Number(p.split('/').pop());
    const s = silences.find((x) => x.id === id);
    if (s) { s.active = false; s.ends_at = new Date().toISOString(); }
    return { expired: id };
  }
  return null;
}

createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && (url.pathname === '/' || url.pathname.startsWith('/assets/'))) {
    const file = url.pathname === '/' ? 'index.html' : url.pathname.slice('/assets/'.length);
    const path = join(dir, file);
    if (!/^[a-z0-9._-]+$/i.test(file) || !existsSync(path)) return json(res, 404, { error: { code: 'not_found', message: file } });
    res.writeHead(200, { 'content-type': types[extname(file)] || 'application/octet-stream', 'cache-control': 'no-cache' });
    return res.end(readFileSync(path));
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  try {
    const real = await upstream(req.method, req.url, req.headers, body);
    if (mock) {
      const m = await mockAnswer(req, url, body.toString(), real);
      if (m) return Array.isArray(m) ? json(res, m[0], m[1]) : json(res, 200, m);
    }
    res.writeHead(real.status, real.headers);
    res.end(real.body);
  } catch (e) {
    json(res, 502, { error: { code: 'dev_proxy', message: String(e) } });
  }
}).listen(Number(lport), lhost, () => console.log(`dev server on http://${lhost}:${lport}/ -> ${thost}:${tport}${mock ? ' (mock)' : ''}`));
