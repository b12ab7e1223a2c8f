#!/usr/bin/env node
// Bundles the dashboard: node web/build.mjs --outdir DIR [--dev]
// Writes DIR/index.html, DIR/app.js, DIR/app.css and DIR/favicon.svg (stable names: the C++
// build embeds them, and index.html loads /assets/app.js and /assets/app.css). Minified unless
// --dev. Needs `npm ci` in web/ first (esbuild and echarts from web/node_modules).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
let outdir = null;
let dev = false;
let quiet = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--outdir') outdir = args[++i];
  else if (a.startsWith('--outdir=')) outdir = a.slice('--outdir='.length);
  else if (a === '--dev') dev = true;
  else if (a === '--quiet') quiet = true;
  else {
    console.error(`build.mjs: unknown argument "${a}"\nusage: node web/build.mjs --outdir DIR [--dev] [--quiet]`);
    process.exit(2);
  }
}
if (!outdir) {
  console.error('usage: node web/build.mjs --outdir DIR [--dev] [--quiet]');
  process.exit(2);
}
outdir = resolve(outdir);
mkdirSync(outdir, { recursive: true });

try {
  await build({
    absWorkingDir: here,
    entryPoints: { app: join(here, 'src/main.js') },
    bundle: true,
    minify: !dev,
    sourcemap: dev ? 'inline' : false,
    format: 'iife',
    target: ['chrome100', 'firefox100', 'safari15'],
    outdir,
    entryNames: '[name]',
    legalComments: 'none',
    logLevel: 'warning',
    // Same output for the same input: no timestamps, no absolute paths.
    define: { 'process.env.NODE_ENV': '"production"' },
  });
} catch (e) {
  // esbuild has printed the errors.
  process.exit(1);
}

// index.html: copied as is (it references /assets/app.js and /assets/app.css).
const html = readFileSync(join(here, 'src/index.html'), 'utf8');
for (const ref of ['/assets/app.js', '/assets/app.css']) {
  if (!html.includes(ref)) {
    console.error(`build.mjs: src/index.html must reference ${ref}`);
    process.exit(1);
  }
}
writeFileSync(join(outdir, 'index.html'), html);
copyFileSync(join(here, 'src/favicon.svg'), join(outdir, 'favicon.svg'));

if (!quiet) {
  for (const f of ['index.html', 'app.js', 'app.css', 'favicon.svg']) {
    const p = join(outdir, f);
    const size = statSync(p).size;
    const gz = gzipSync(readFileSync(p), { level: 9 }).length;
    console.log(`${f.padEnd(12)} ${(size / 1024).toFixed(1).padStart(7)} KiB  (gzip ${(gz / 1024).toFixed(1)} KiB)`);
  }
}
