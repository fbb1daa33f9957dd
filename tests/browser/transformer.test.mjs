// The page of `attn serve` on a Transformer, in Debian's headless chromium:
// trains a tiny Transformer (2 + 2 layers of 2 heads) on `attn demo`'s toy
// data, serves it, and checks the layer / head selectors (web/maps.js): they
// replace the flat map select, start at the model's default (the last layer's
// mean), and switching them asks the server for the named map and redraws
// the heatmap with its weights and title; the encoder's self-attention panel
// does the same with its own selectors. Saves a screenshot.
//
//   node transformer.test.mjs --attn BUILD/attn --out DIR [--model RUN_DIR] [--text "..."]
//
// --model: serve this Transformer run folder instead of training the tiny one.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { check, finish, launchChromium, run, screenshot, startServer, stopServer, watchPage } from './common.mjs';

const { values: opts } = parseArgs({
  options: {
    attn: { type: 'string' }, out: { type: 'string' }, model: { type: 'string' },
    text: { type: 'string', default: 'red cat two blue .' },
  },
});

// `attn demo`'s generated toy data (one epoch of its rnnsearch: only the data
// is used), then a tiny Transformer trained on it for 2 epochs by `attn train`.
async function trainTinyTransformer(attn, dir, logDir) {
  const started = Date.now();
  await run(attn, ['demo', '--out', path.join(dir, 'demo'), '--epochs', '1', '--threads', '1'], path.join(logDir, 'demo-data.log'));
  const data = path.join(dir, 'demo', 'data');
  const config = path.join(dir, 'transformer.yaml');
  fs.writeFileSync(config, [
    'data:', `  train_src: ${data}/train.en`, `  train_tgt: ${data}/train.fr`,
    `  valid_src: ${data}/valid.en`, `  valid_tgt: ${data}/valid.fr`,
    'vocab:', '  size: 80',
    'model:', '  type: transformer', '  embed: 32', '  encoder_layers: 2', '  decoder_layers: 2', '  heads: 2',
    '  feed_forward: 64', '  max_positions: 64', '  dropout: 0',
    'train:', `  out_dir: ${dir}/run`, '  max_tokens: 800', '  lr: 0.003', '  lr_patience: 2', '  valid_every: 0',
    '  log_every: 1000', '  max_epochs: 2', '  threads: 1', '  seed: 3', ''].join('\n'));
  const log = path.join(logDir, 'transformer-train.log');
  await run(attn, ['train', '-c', config], log);
  console.log(`# tiny transformer trained in ${((Date.now() - started) / 1000).toFixed(1)} s (log: ${log})`);
  return path.join(dir, 'run');
}

const SLOW = 180000;  // ms: a real model on a busy 2-core machine takes its time

const weightsOf = (page, table) => page.$$eval(`#${table} td[data-row][data-col]`,
    (tds) => tds.map((td) => ({ row: Number(td.dataset.row), col: Number(td.dataset.col), weight: Number(td.dataset.weight) })));
const optionsOf = (page, id) => page.$$eval(`#${id} option`, (os) => os.map((o) => o.value));

// The cells of a table hold the matrix `weights` [rows][cols] exactly.
function expectCells(cells, weights, what) {
  const want = weights.flatMap((row, r) => row.map((w, c) => ({ row: r, col: c, weight: w })));
  check(`${what}: ${weights.length} x ${weights[0]?.length ?? 0} cells with the answer's weights`, () => {
    assert.ok(want.length > 0, 'an empty heatmap checks nothing');
    assert.deepEqual(cells, want);
  });
}

// Waits for the page's next /v1/translate and /v1/explain answers after `act`.
async function answersAfter(page, act) {
  const trWait = page.waitForResponse((r) => r.url().endsWith('/v1/translate'), { timeout: SLOW });
  const exWait = page.waitForResponse((r) => r.url().endsWith('/v1/explain'), { timeout: SLOW });
  await act();
  const [tr, ex] = await Promise.all([trWait, exWait]);
  await page.waitForSelector('body[data-status="done"]', { timeout: SLOW });
  return { trReq: tr.request().postDataJSON(), exReq: ex.request().postDataJSON(), tr: await tr.json(), ex: await ex.json() };
}

// The layers and heads /health's list `maps` names ("<family>.layer<l>.head<h>").
function countOf(maps) {
  const layers = new Set(), heads = new Set();
  for (const m of maps) {
    const [, l, h] = /\.layer(\d+)\.(?:head(\d+)|mean)$/.exec(m) ?? [];
    if (l) layers.add(l);
    if (h) heads.add(h);
  }
  return { L: layers.size, H: heads.size };
}
const range = (n) => Array.from({ length: n }, (_, i) => String(i + 1));

async function checkCrossSelectors(page, health) {
  const { L, H } = countOf(health.attention_maps);
  await page.waitForSelector('#layer-field:not([hidden])');
  const layers = await optionsOf(page, 'attention-layer'), heads = await optionsOf(page, 'attention-head');
  const chosen = await page.$eval('#attention-layer', (s) => s.value) + '/' + await page.$eval('#attention-head', (s) => s.value);
  const flatHidden = await page.$eval('#map-field', (f) => f.hidden);
  check(`the layer / head selectors replace the flat one: layers ${layers}, heads ${heads}, at ${chosen}`, () => {
    assert.ok(L >= 2 && H >= 2, `a model of ${L} layers and ${H} heads cannot switch both`);
    assert.equal(health.attention_maps[0], `cross.layer${L}.mean`);
    assert.deepEqual(layers, range(L));
    assert.deepEqual(heads, ['mean', ...range(H)]);
    assert.equal(chosen, `${L}/mean`);
    assert.equal(flatHidden, true);
  });

  await page.fill('#src', opts.text);
  await page.fill('#beam', '1');
  const first = await answersAfter(page, () => page.press('#src', 'Enter'));
  check('the requests name the default map (and the encoder\'s)', () => {
    assert.equal(first.trReq.attention_map, `cross.layer${L}.mean`);
    assert.equal(first.exReq.attention_map, `cross.layer${L}.mean`);
    assert.equal(first.exReq.self_attention_map, health.encoder_attention_maps[0]);
  });
  expectCells(await weightsOf(page, 'heatmap'), first.tr.weights, `cross.layer${L}.mean`);
  const title = await page.textContent('#heatmap-title');
  check(`the heatmap's title names its map: "${title}"`, () => assert.equal(title, `cross-attention, layer ${L}, mean of ${H} heads`));

  await page.selectOption('#attention-layer', '1');  // asks again at once
  await page.waitForSelector('body[data-status="done"]', { timeout: SLOW });
  const second = await answersAfter(page, () => page.selectOption('#attention-head', '2'));
  check('switching layer and head asks for cross.layer1.head2', () => {
    assert.equal(second.trReq.attention_map, 'cross.layer1.head2');
    assert.equal(second.exReq.attention_map, 'cross.layer1.head2');
    assert.equal(second.ex.attention_map, 'cross.layer1.head2');
  });
  const cells = await weightsOf(page, 'heatmap');
  expectCells(cells, second.tr.weights, 'cross.layer1.head2');
  check('the heatmap changed with the map', () => assert.notDeepEqual(cells.map((c) => c.weight), first.tr.weights.flat()));
  const title2 = await page.textContent('#heatmap-title');
  check(`the title follows: "${title2}"`, () => assert.equal(title2, 'cross-attention, layer 1, head 2'));
  return second;
}

async function checkSelfAttention(page, answers, health) {
  const { L } = countOf(health.encoder_attention_maps);
  const shown = await page.$eval('#self-panel', (p) => !p.hidden);
  check('the encoder self-attention panel is shown', () => assert.equal(shown, true));
  const S = answers.ex.src_tokens.length;
  const before = await weightsOf(page, 'self-heatmap');
  expectCells(before, answers.ex.self_attention.weights, `${answers.ex.self_attention.map} (${S} x ${S})`);
  const exWait = page.waitForResponse((r) => r.url().endsWith('/v1/explain'), { timeout: SLOW });
  await page.selectOption('#self-head', '1');
  const res = await exWait;
  const ex = await res.json();
  await page.waitForSelector('body[data-status="done"]', { timeout: SLOW });
  check(`switching the encoder head asks for self.layer${L}.head1`, () => {
    assert.equal(res.request().postDataJSON().self_attention_map, `self.layer${L}.head1`);
    assert.equal(ex.self_attention.map, `self.layer${L}.head1`);
  });
  const after = await weightsOf(page, 'self-heatmap');
  expectCells(after, ex.self_attention.weights, `self.layer${L}.head1`);
  check('the self-attention heatmap changed with the head', () =>
    assert.notDeepEqual(after.map((c) => c.weight), before.map((c) => c.weight)));
  const title = await page.textContent('#self-title');
  check(`its title names the map: "${title}"`, () => assert.equal(title, `encoder self-attention, layer ${L}, head 1`));
}

async function main() {
  assert.ok(opts.out, '--out DIR is required (the screenshot and logs go there)');
  fs.mkdirSync(opts.out, { recursive: true });
  assert.ok(opts.attn && fs.existsSync(opts.attn), `--attn: no attn binary at ${opts.attn}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-browser-tr-'));
  let server = null;
  try {
    const model = opts.model ?? (await trainTinyTransformer(opts.attn, tmp, opts.out));
    server = await startServer(opts.attn, model, path.join(opts.out, 'serve-transformer.log'));
    console.log(`# attn serve on ${server.url}`);
    const health = await (await fetch(server.url + '/health')).json();
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const checkClean = watchPage(page, server.url);
      await page.goto(server.url + '/');
      const answers = await checkCrossSelectors(page, health);
      await checkSelfAttention(page, answers, health);
      await screenshot(page, opts.out, 'transformer-page.png');
      checkClean();
    } finally {
      await browser.close();
    }
  } finally {
    stopServer(server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

finish(main());
