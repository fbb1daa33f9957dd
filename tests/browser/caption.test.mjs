// The page's image mode in Debian's headless chromium, end to end: trains a
// tiny captioner on generated scenes (`attn caption data`, then `attn train -c`
// for 1000 steps, as tests/serve_test_util.h's serve_caption_run: about 11 s),
// starts `attn serve` on
// it, and drives the page like a user: uploads a scene through the file
// picker, checks the caption against `attn caption -m RUN IMAGE` and the API's
// answer, hovers two words and checks that the overlay follows each word's
// attention, keeps a clicked word, drops a second scene on the drop zone, and
// checks that a file that is not an image gets the server's error. Saves a
// screenshot (OUT/page-caption.png).
//
//   node caption.test.mjs --attn BUILD/attn --out DIR [--model RUN_DIR --image FILE [--image FILE2]] [--hover N]
//
// --model: serve this captioning run instead of training the tiny one (--image:
// the picture to pick, then the one to drop: the same file when one is given);
// --hover: the word clicked for the screenshot (default 1).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { check, finish, launchChromium, run, screenshot, startServer, stopServer, watchPage } from './common.mjs';

const { values: opts } = parseArgs({
  options: {
    attn: { type: 'string' }, out: { type: 'string' }, model: { type: 'string' }, image: { type: 'string', multiple: true },
    hover: { type: 'string', default: '1' },
  },
});

// ---- the tiny captioner ----

// tests/caption_run.h's caption_config with toy_captioner("soft"): 32x32 scenes, a 4 x 4 grid
function captionConfig(json, out) {
  return `data:
  captions: ${json}
vocab:
  size: 40
model:
  type: show_attend_tell
  image_size: 32
  grid: 4
  cnn_channels: 8
  embed: 16
  decoder_hidden: 32
  attention: 16
  image_attention: soft
  dropout: 0
train:
  out_dir: ${out}
  max_tokens: 400
  lr: 0.003
  label_smoothing: 0
  max_steps: 1000
  max_epochs: 0
  valid_every: 0
  log_every: 50
  threads: 2
  seed: 2
`;
}

// 300 scenes of 32x32 pixels (seed 7) and 1000 training steps; returns the run and two scenes.
async function trainTinyCaptioner(attn, dir, logDir) {
  const started = Date.now();
  const scenes = path.join(dir, 'scenes');
  await run(attn, ['caption', 'data', '--out', scenes, '--count', '300', '--seed', '7', '--size', '32'],
            path.join(logDir, 'caption-data.log'));
  const config = path.join(dir, 'run.yaml');
  fs.writeFileSync(config, captionConfig(path.join(scenes, 'dataset_shapes.json'), path.join(dir, 'run')));
  await run(attn, ['train', '-c', config], path.join(logDir, 'caption-train.log'));
  console.log(`# tiny captioner trained in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const images = fs.readdirSync(path.join(scenes, 'images')).filter((f) => f.endsWith('.png')).sort();
  return { model: path.join(dir, 'run'), images: [images[0], images[1]].map((f) => path.join(scenes, 'images', f)) };
}

// What `attn caption -m RUN IMAGE` prints after the tab.
function cliCaption(attn, model, image) {
  const out = execFileSync(attn, ['caption', '-m', model, image], { encoding: 'utf8' });
  assert.ok(out.startsWith(`${image}\t`), out);
  return out.slice(image.length + 1).replace(/\n$/, '');
}

// ---- reading the page ----

// The API's answer for a file, asked here (chromium's inspector does not keep
// the body of the page's own upload answer: "Request content was evicted").
async function apiCaption(url, file) {
  const res = await fetch(`${url}/v1/caption`, { method: 'POST', headers: { 'Content-Type': 'image/png' }, body: fs.readFileSync(file) });
  return { status: res.status, body: await res.json() };
}

// The overlay canvas's pixels (RGBA) and its size, and which word it shows.
const overlayPixels = (page) => page.$eval('#overlay', (c) => ({
  word: Number(c.dataset.word), width: c.width, height: c.height,
  data: Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data),
}));

// The overlay's RGB at the pixel nearest grid cell g's centre, and what
// viz/image_attention's mask blend makes of the plain picture's pixel there
// with weight m (the bilinear map at a cell centre is the cell's own weight):
// (1 - m) * 0.25 * v + m * (v + (1 - v) / 3), m = the weight over the row's largest.
function atCellCentre(overlay, plain, grid, g, m) {
  const [gh, gw] = grid;
  const x = Math.floor(((g % gw) + 0.5) * overlay.width / gw), y = Math.floor((Math.floor(g / gw) + 0.5) * overlay.height / gh);
  const i = (y * overlay.width + x) * 4;
  const shown = [0, 1, 2].map((k) => overlay.data[i + k]);
  const expected = [0, 1, 2].map((k) => {
    const v = plain.data[i + k] / 255;
    return 255 * ((1 - m) * 0.25 * v + m * (v + (1 - v) / 3));
  });
  return { shown, expected };
}

const argmax = (row) => row.indexOf(Math.max(...row));
const argmin = (row) => row.indexOf(Math.min(...row));
const distance = (a, b) => a.reduce((s, x, i) => s + Math.abs(x - b[i]), 0);

// ---- the checks ----

async function uploadAndCheckCaption(page, url, attn, model, image) {
  // what the page hands to fetch (chromium's inspector reports no post data for a File body)
  await page.evaluate(() => {
    const fetchOriginal = window.fetch;
    window.fetch = async (input, init) => {
      if (init?.body instanceof Blob) window.sentBody = Array.from(new Uint8Array(await init.body.arrayBuffer()));
      return fetchOriginal(input, init);
    };
  });
  const wait = page.waitForResponse((r) => r.url().includes('/v1/caption'));
  await page.setInputFiles('#image-file', image);
  const res = await wait;
  const sent = Buffer.from(await page.evaluate(() => window.sentBody ?? []));
  const answer = (await apiCaption(url, image)).body;
  await page.waitForSelector('body[data-status="done"]');
  const words = await page.$$eval('#caption-words button.word', (bs) => bs.map((b) => b.textContent));
  const thumbs = await page.$$eval('#strip figure.thumb', (fs) => fs.map((f) => f.querySelector('figcaption').textContent));
  const want = cliCaption(attn, model, image);
  check(`the picked file is captioned "${answer.caption}", as \`attn caption\` captions it`, () => {
    assert.equal(res.status(), 200, JSON.stringify(answer));
    assert.equal(res.request().headers()['content-type'], 'image/png');
    assert.ok(sent.equals(fs.readFileSync(image)), `the file is sent as it is (${sent.length} bytes sent)`);
    assert.equal(answer.caption, want);
    assert.deepEqual(words, answer.words);
    assert.deepEqual(thumbs, answer.words, 'one strip panel per word');
    assert.equal(answer.attention.length, answer.words.length);
  });
  return answer;
}

async function hoverAndCheckOverlay(page, answer) {
  const T = answer.words.length;
  check(`the caption has at least two words to compare (${T})`, () => assert.ok(T >= 2));
  await page.mouse.move(0, 0);
  const plain = await overlayPixels(page);
  // word 0 and the word whose attention differs most from it
  let other = 1;
  for (let t = 1; t < T; t += 1) if (distance(answer.attention[t], answer.attention[0]) > distance(answer.attention[other], answer.attention[0])) other = t;
  const seen = [];
  for (const t of [0, other]) {
    await page.hover(`#caption-words button.word[data-word="${t}"]`);
    const shown = await overlayPixels(page);
    const row = answer.attention[t];
    const peak = Math.max(...row);
    const cells = [argmax(row), argmin(row)].map((g) => ({ g, ...atCellCentre(shown, plain, answer.grid, g, row[g] / peak) }));
    check(`hovering "${answer.words[t]}" draws its attention over the picture: at the centres of its ` +
          `strongest and weakest cells (${cells[0].g}, ${cells[1].g}) the mask blend of their weights`, () => {
      assert.equal(shown.word, t);
      assert.equal(shown.width, plain.width);
      for (const { g, shown: got, expected } of cells) {
        for (let k = 0; k < 3; k += 1) assert.ok(Math.abs(got[k] - expected[k]) <= 6, `cell ${g}: ${got} vs ${expected.map(Math.round)}`);
      }
    });
    seen.push(shown.data);
  }
  check(`the two words' overlays differ ("${answer.words[0]}", "${answer.words[other]}")`, () => {
    const differing = seen[0].filter((v, i) => v !== seen[1][i]).length;
    assert.ok(differing > seen[0].length / 100, `${differing} of ${seen[0].length} values differ`);
    assert.notDeepEqual(seen[0], plain.data);
  });
  // a click keeps the word when the pointer leaves
  await page.click(`#caption-words button.word[data-word="${other}"]`);
  await page.mouse.move(0, 0);
  const kept = await overlayPixels(page);
  const pressed = await page.$$eval('#caption-words button.word', (bs) => bs.map((b) => b.getAttribute('aria-pressed')));
  check('a clicked word stays on the overlay after the pointer leaves', () => {
    assert.equal(kept.word, other);
    assert.deepEqual(kept.data, seen[1]);
    assert.deepEqual(pressed, answer.words.map((_, t) => String(t === other)));
  });
  await page.click(`#caption-words button.word[data-word="${other}"]`);  // and a second click lets it go
}

// A file dropped on the drop zone, as a browser hands it over (a DataTransfer).
async function dropFile(page, name, type, bytes) {
  const transfer = await page.evaluateHandle(({ name, type, b64 }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0))], name, { type }));
    return dt;
  }, { name, type, b64: bytes.toString('base64') });
  await page.dispatchEvent('#drop', 'drop', { dataTransfer: transfer });
}

async function dropAndCheck(page, url, attn, model, image) {
  const wait = page.waitForResponse((r) => r.url().includes('/v1/caption'));
  await dropFile(page, path.basename(image), 'image/png', fs.readFileSync(image));
  const dropped = await wait;
  const answer = (await apiCaption(url, image)).body;
  await page.waitForSelector('body[data-status="done"]');
  const words = await page.$$eval('#caption-words button.word', (bs) => bs.map((b) => b.textContent));
  check(`a dropped scene is captioned "${answer.caption}"`, () => {
    assert.equal(dropped.status(), 200);
    assert.equal(answer.caption, cliCaption(attn, model, image));
    assert.deepEqual(words, answer.words);
  });
  // not an image: the server's 400 error is shown
  const bad = page.waitForResponse((r) => r.url().includes('/v1/caption'));
  await dropFile(page, 'notes.txt', 'text/plain', Buffer.from('these are notes, not a picture'));
  const res = await bad;
  const error = await page.evaluate(async () => (await (await fetch('/v1/caption', {
    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: 'these are notes, not a picture',
  })).json()).error);
  await page.waitForSelector('body[data-status="error"]');
  const shown = await page.$$eval('#caption-error .error-message', (ns) => ns.map((n) => n.textContent));
  check(`a text file is refused by the server and its error is shown: "${error}"`, () => {
    assert.equal(res.status(), 400);
    assert.match(error, /^upload: not a PNG or JPEG file \(starts with 74 68 65 73\)/);
    assert.deepEqual(shown, [error]);
  });
}

// ---- main ----

async function main() {
  assert.ok(opts.out, '--out DIR is required (the screenshot and logs go there)');
  assert.ok(opts.attn && fs.existsSync(opts.attn), `--attn: no attn binary at ${opts.attn}`);
  fs.mkdirSync(opts.out, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'attn-caption-browser-'));
  let server = null;
  try {
    const given = opts.model ? { model: opts.model, images: [opts.image?.[0], opts.image?.at(-1)] } : null;
    assert.ok(!given || opts.image, '--model needs --image (one or two)');
    const { model, images } = given ?? (await trainTinyCaptioner(opts.attn, tmp, opts.out));
    server = await startServer(opts.attn, model, path.join(opts.out, 'serve-caption.log'));
    console.log(`# attn serve on ${server.url}`);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const checkClean = watchPage(page, server.url);
      await page.goto(server.url + '/');
      await page.waitForSelector('body[data-mode="image"]');
      const visible = await page.$$eval('#translate-form, #caption-panel, #explain', (ns) => ns.map((n) => !n.hidden));
      check('an image model turns the page to its image mode (upload shown, translation hidden)', () => {
        assert.deepEqual(visible, [false, true, false]);
      });
      const answer = await uploadAndCheckCaption(page, server.url, opts.attn, model, images[0]);
      await hoverAndCheckOverlay(page, answer);
      const hover = Math.min(Number(opts.hover), answer.words.length - 1);
      await page.click(`#caption-words button.word[data-word="${hover}"]`);  // kept (a full-page shot may move the pointer)
      await screenshot(page, opts.out, 'page-caption.png');
      checkClean();  // (the 400 answer below logs a console error of its own)
      await dropAndCheck(page, server.url, opts.attn, model, images[1]);
    } finally {
      await browser.close();
    }
  } finally {
    stopServer(server);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

finish(main());
