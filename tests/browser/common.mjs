// Shared by the browser tests (page.test.mjs: the translation page;
// caption.test.mjs: its image mode): Debian's headless chromium through
// playwright-core, `attn` commands run to completion, `attn serve` started on a
// free port, and the numbered checks they print.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const { chromium } = await import('playwright-core').catch((e) => {
  console.error(`playwright-core is not installed (${e.code}): run scripts/install-test-deps.sh ` +
                '(npm ci in tests/browser)');
  process.exit(1);
});

const CHROMIUM = '/usr/bin/chromium';
// As root chromium needs --no-sandbox; the rest keep it off the network (closed here).
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                       '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

let checks = 0;
export function check(what, fn) {
  fn();
  checks += 1;
  console.log(`ok ${checks} - ${what}`);
}
export const checksPassed = () => checks;

// Runs `cmd args` to completion, its output in logFile; rejects on a non-zero exit.
export function run(cmd, args, logFile) {
  return new Promise((resolve, reject) => {
    const log = fs.createWriteStream(logFile);
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(log);
    child.stderr.pipe(log);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}; see ${logFile}`))));
  });
}

// Starts `attn serve -m model --port 0` and reads the port from its listening line.
export function startServer(attn, model, logFile) {
  return new Promise((resolve, reject) => {
    const child = spawn(attn, ['serve', '-m', model, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const log = fs.createWriteStream(logFile);
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`attn serve printed no listening line in 60 s; see ${logFile}`)), 60000);
    const onData = (chunk) => {
      log.write(chunk);
      seen += chunk.toString();
      const m = seen.match(/attn serve: listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1] }); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`attn serve exited with ${code} before listening:\n${seen}`)); });
  });
}

// Stops a server startServer started (SIGTERM: it answers what is in flight and exits).
export function stopServer(server) {
  server?.child.removeAllListeners('exit');
  server?.child.kill('SIGTERM');
}

// Records page errors, console errors and requests to anywhere but `url`.
export function watchPage(page, url) {
  const problems = [], foreign = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  page.on('request', (r) => { if (!r.url().startsWith(url) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) foreign.push(r.url()); });
  return () => check('no page or console errors, no request beyond the server', () => {
    assert.deepEqual(problems, []);
    assert.deepEqual(foreign, []);
  });
}

// Ends the test: "N passed, 0 failed", or the error and exit status 1.
// A full-page screenshot of `page` to OUT/name (the test's figure to look at), its path logged
export async function screenshot(page, out, name) {
  const shot = path.resolve(out, name);
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`# screenshot: ${shot}`);
}

export function finish(promise) {
  promise.then(() => console.log(`${checks} passed, 0 failed`)).catch((e) => {
    console.error(`not ok - ${e.stack ?? e}`);
    console.log(`${checks} passed, 1 failed`);
    process.exit(1);
  });
}
