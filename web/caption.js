// The page's image mode, for a model that reads images (GET /health "input":
// "image"): upload a picture (file picker or drag and drop), caption it with
// POST /v1/caption, and draw the attention of the hovered or clicked word over
// the picture, as viz/image_attention.h draws it for `attn caption --attention`:
// the word's weights over the Gh x Gw grid upsampled bilinearly to the picture
// (cell centres, clamped at the border), scaled so that their largest value is
// 1, and blended with the mask look (25% of the picture where the word does not
// look, the picture lifted a third of the way to white where it looks hardest).
// Uses app.js's helpers ($, el, fmt, apiRequest, showErrors, ApiError).
//
// Stable hooks (tests/browser/caption.test.mjs):
//   #image-file, #drop          the file picker and the drop zone around it; #caption-beam (1-10)
//   #caption-attention-map      the map of the captions' attention (app.js's #attention-map rule:
//                               #caption-map-field shown only for a model of more than one map)
//   #caption-error              the server's JSON "error"; hidden when there is none
//   #caption-words              one button.word[data-word][aria-pressed] per caption word
//   #overlay[data-word]         the picture with word data-word's attention (-1: the picture alone)
//   #strip                      one figure.thumb[data-word] per word: a small overlay canvas and the word
//   #word-readout               the shown word, and its cell of most weight [data-cell] and weight
'use strict';

const OVERLAY_BOX = 440;  // the big overlay fits a square of this side (CSS pixels)
const THUMB_BOX = 112;    // each strip panel's square
const UPLOAD_MAX_SIDE = 1024;  // a picture that must be shrunk for the server's limits is shrunk to this side at most

const captionState = {
  health: null,      // GET /health's answer
  requestId: 0,
  picture: null,     // an ImageBitmap of the uploaded picture (what the overlays are drawn on)
  answer: null,      // POST /v1/caption's answer
  selected: null,    // the clicked word
  shown: -1,         // the word on the big overlay (-1: none)
  cache: new Map(),  // "size:word" -> ImageData of that overlay
};

// ---- the attention over the picture ----

// Bilinear taps along one axis of n pixels over `cells` cells (viz/image_attention.cpp's taps).
function taps(n, cells) {
  const out = [];
  for (let p = 0; p < n; p += 1) {
    const src = Math.min(Math.max((p + 0.5) * cells / n - 0.5, 0), cells - 1);
    const lo = Math.floor(src);
    out.push({ lo, hi: Math.min(lo + 1, cells - 1), frac: src - lo });
  }
  return out;
}

// Word t's weights as a [h, w] map at the canvas's size, its maximum scaled to 1.
function upsample(row, gh, gw, w, h) {
  const tx = taps(w, gw), ty = taps(h, gh);
  const map = new Float32Array(w * h);
  let peak = 0;
  for (let y = 0; y < h; y += 1) {
    const v = ty[y];
    for (let x = 0; x < w; x += 1) {
      const u = tx[x];
      const top = row[v.lo * gw + u.lo] * (1 - u.frac) + row[v.lo * gw + u.hi] * u.frac;
      const bottom = row[v.hi * gw + u.lo] * (1 - u.frac) + row[v.hi * gw + u.hi] * u.frac;
      const m = top * (1 - v.frac) + bottom * v.frac;
      map[y * w + x] = m;
      if (m > peak) peak = m;
    }
  }
  if (peak > 0) for (let i = 0; i < map.length; i += 1) map[i] /= peak;
  return map;
}

// The picture at w x h as ImageData (drawn smoothly, as the model's bilinear resize would).
function pictureData(w, h) {
  const c = document.createElement('canvas');
  c.width = w;
  c.height = h;
  const ctx = c.getContext('2d', { willReadFrequently: true });
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(captionState.picture, 0, 0, w, h);
  return ctx.getImageData(0, 0, w, h);
}

// Word t's overlay at w x h (cached): the mask blend of viz/image_attention.cpp.
function overlayData(t, w, h) {
  const key = `${w}x${h}:${t}`;
  if (captionState.cache.has(key)) return captionState.cache.get(key);
  const base = pictureData(w, h);
  const out = new ImageData(w, h);
  const [gh, gw] = captionState.answer.grid;
  const map = upsample(captionState.answer.attention[t], gh, gw, w, h);
  for (let p = 0; p < w * h; p += 1) {
    const m = Math.min(Math.max(map[p], 0), 1);
    for (let k = 0; k < 3; k += 1) {
      const v = base.data[p * 4 + k] / 255;
      out.data[p * 4 + k] = Math.round(255 * ((1 - m) * 0.25 * v + m * (v + (1 - v) / 3)));
    }
    out.data[p * 4 + 3] = 255;
  }
  captionState.cache.set(key, out);
  return out;
}

// The picture's size fitted into a square of `box` CSS pixels, aspect kept.
function fitted(box) {
  const { width, height } = captionState.picture;
  const scale = box / Math.max(width, height);
  return { w: Math.max(1, Math.round(width * scale)), h: Math.max(1, Math.round(height * scale)) };
}

// Draws word t's overlay (or the picture alone for t = -1) on `canvas` fitted into `box`.
function drawOverlay(canvas, t, box, gridLines) {
  const { w, h } = fitted(box);
  const ratio = Math.min(2, window.devicePixelRatio || 1);  // sharp on high-density screens
  const pw = Math.round(w * ratio), ph = Math.round(h * ratio);
  canvas.width = pw;
  canvas.height = ph;
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext('2d');
  if (t < 0) {
    ctx.imageSmoothingQuality = 'high';
    ctx.drawImage(captionState.picture, 0, 0, pw, ph);
  } else {
    ctx.putImageData(overlayData(t, pw, ph), 0, 0);
  }
  if (gridLines && t >= 0) drawGrid(ctx, pw, ph);
}

// The grid's cell borders, faint: the cells the weights belong to.
function drawGrid(ctx, w, h) {
  const [gh, gw] = captionState.answer.grid;
  ctx.strokeStyle = 'rgba(255, 255, 255, 0.18)';
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let c = 1; c < gw; c += 1) {
    const x = Math.round((c * w) / gw) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, h);
  }
  for (let r = 1; r < gh; r += 1) {
    const y = Math.round((r * h) / gh) + 0.5;
    ctx.moveTo(0, y);
    ctx.lineTo(w, y);
  }
  ctx.stroke();
}

// ---- showing a caption ----

function showWord(t) {
  captionState.shown = t;
  const canvas = $('overlay');
  canvas.dataset.word = String(t);
  drawOverlay(canvas, t, OVERLAY_BOX, $('show-grid').checked);
  const a = captionState.answer;
  document.querySelectorAll('#caption-words .word, #strip .thumb').forEach((n) => {
    n.classList.toggle('is-shown', Number(n.dataset.word) === t);
  });
  const ro = $('word-readout');
  if (t < 0) {
    delete ro.dataset.cell;
    $('overlay-label').textContent = 'The uploaded picture.';
    ro.replaceChildren(el('span', { class: 'empty', text: 'Hover a word.' }));
    return;
  }
  const row = a.attention[t];
  const best = row.indexOf(Math.max(...row));
  const [, gw] = a.grid;
  ro.dataset.cell = String(best);
  $('overlay-label').textContent = `Where the decoder looked while writing "${a.words[t]}" (word ${t + 1} of ${a.words.length}).`;
  ro.replaceChildren(
      el('span', { class: 'label', text: 'word' }), el('span', { class: 'tok readout-word', text: a.words[t] }),
      el('span', { class: 'label', text: 'most weight' }),
      el('span', { text: `row ${Math.floor(best / gw) + 1}, column ${(best % gw) + 1}` }),
      el('span', { class: 'label', text: 'weight' }), el('span', { class: 'readout-weight', text: fmt(row[best], 3) }),
      el('span', { class: 'readout-track' }, [el('span', { class: 'readout-fill', style: `width: ${(100 * row[best]).toFixed(1)}%` })]));
}

function selectWord(t) {
  captionState.selected = captionState.selected === t ? null : t;
  document.querySelectorAll('#caption-words .word').forEach((b) => {
    b.setAttribute('aria-pressed', String(Number(b.dataset.word) === captionState.selected));
  });
  showWord(captionState.selected ?? -1);
}

function showCaption(answer) {
  captionState.answer = answer;
  captionState.cache.clear();
  captionState.selected = null;
  const words = $('caption-words');
  words.replaceChildren();
  answer.words.forEach((w, t) => {
    words.append(el('button', { type: 'button', class: 'word', 'data-word': t, 'aria-pressed': 'false', text: w,
                                title: 'Show where the decoder looked for this word (click to keep it)' }));
  });
  if (!answer.words.length) words.append(el('span', { class: 'empty', text: '(an empty caption)' }));
  const [gh, gw] = answer.grid, [ih, iw] = answer.image_size;
  $('caption-meta').textContent = `${answer.words.length} words · log probability ${fmt(answer.log_prob, 3)}` +
      `${answer.finished ? '' : ' · cut off at the length limit'} · the model saw ${iw} x ${ih} pixels, a grid of ${gh} x ${gw} cells`;
  const strip = $('strip');
  strip.replaceChildren();
  answer.words.forEach((w, t) => {
    const canvas = el('canvas', { 'aria-hidden': 'true' });
    const fig = el('figure', { class: 'thumb', 'data-word': t, tabindex: '0', title: `"${w}": click to keep it` },
                   [canvas, el('figcaption', { class: 'tok', text: w })]);
    strip.append(fig);
    drawOverlay(canvas, t, THUMB_BOX, false);
  });
  $('strip-wrap').hidden = !answer.words.length;
  $('caption-view').hidden = false;
  $('caption-empty').hidden = true;
  showWord(-1);
}

// ---- uploading ----

function readCaptionBeam() {
  const raw = $('caption-beam').value.trim();
  const beam = Number(raw);
  return /^\d+$/.test(raw) && beam >= 1 && beam <= 10 ? beam : null;
}

// The picture re-encoded smaller (JPEG) until it fits the server's limits.
async function shrink(bitmap, health) {
  let scale = Math.min(1, UPLOAD_MAX_SIDE / Math.max(bitmap.width, bitmap.height),
                       Math.sqrt((health.max_image_pixels ?? Infinity) / (bitmap.width * bitmap.height)));
  for (let tries = 0; tries < 6; tries += 1, scale *= 0.7) {
    const c = document.createElement('canvas');
    c.width = Math.max(1, Math.floor(bitmap.width * scale));
    c.height = Math.max(1, Math.floor(bitmap.height * scale));
    c.getContext('2d').drawImage(bitmap, 0, 0, c.width, c.height);
    const blob = await new Promise((resolve) => c.toBlob(resolve, 'image/jpeg', 0.9));
    if (blob && blob.size <= (health.max_body ?? Infinity)) return { blob, width: c.width, height: c.height };
  }
  throw new ApiError('the picture does not fit the server\'s request size limit even when shrunk', null);
}

// What to send: the file itself when the server takes it as it is (so that
// the page's caption is the one `attn caption` gives the same file), else the
// picture shrunk in the browser. A file the browser cannot read is sent as is:
// the server's error then names the problem.
async function uploadBody(file, bitmap) {
  const h = captionState.health;
  const isPngOrJpeg = file.type === 'image/png' || file.type === 'image/jpeg';
  const fits = file.size <= (h.max_body ?? Infinity) &&
      (!bitmap || bitmap.width * bitmap.height <= (h.max_image_pixels ?? Infinity));
  if (!bitmap || (fits && isPngOrJpeg)) return { body: file, type: isPngOrJpeg ? file.type : 'application/octet-stream', note: '' };
  const s = await shrink(bitmap, h);
  return { body: s.blob, type: 'image/jpeg', note: `Sent shrunk to ${s.width} x ${s.height} (JPEG) to fit the server's limits.` };
}

async function captionFile(file) {
  if (!file) return;
  const beam = readCaptionBeam();
  if (beam === null) {
    showErrors([{ what: 'Beam size', error: new ApiError('must be a whole number from 1 to 10', 'beam') }], $('caption-error'));
    return;
  }
  const id = ++captionState.requestId;
  document.body.dataset.status = 'loading';
  $('drop').classList.add('is-busy');
  let bitmap = null;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    // not a picture the browser reads: the server will say what is wrong with it
  }
  try {
    const { body, type, note } = await uploadBody(file, bitmap);
    const map = chosenMap('caption-map-field', 'caption-attention-map');
    const query = `beam=${beam}${map === null ? '' : `&attention_map=${encodeURIComponent(map)}`}`;
    const answer = await apiRequest(`/v1/caption?${query}`, { method: 'POST', headers: { 'Content-Type': type }, body });
    if (id !== captionState.requestId) return;
    if (!bitmap) throw new ApiError('the server captioned a picture this browser cannot show', null);
    captionState.picture = bitmap;
    showCaption(answer);
    $('overlay-label').dataset.note = note;
    showErrors([], $('caption-error'));
    $('drop').querySelector('.drop-sub').textContent = `${file.name} (${bitmap.width} x ${bitmap.height}). ${note} Drop another, or click.`;
    document.body.dataset.status = 'done';
  } catch (e) {
    if (id !== captionState.requestId) return;
    showErrors([{ what: 'Caption', error: e }], $('caption-error'));
    document.body.dataset.status = 'error';
  } finally {
    if (id === captionState.requestId) $('drop').classList.remove('is-busy');
  }
}

// ---- start ----

function wireCaption() {
  $('image-file').addEventListener('change', (e) => captionFile(e.target.files[0]));
  const drop = $('drop');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('is-over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('is-over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('is-over');
    captionFile(e.dataTransfer.files[0]);
  });
  $('caption-form').addEventListener('submit', (e) => e.preventDefault());
  // hovering a word (or its panel) shows it; leaving goes back to the clicked word
  for (const list of [$('caption-words'), $('strip')]) {
    list.addEventListener('mouseover', (e) => {
      const n = e.target.closest('[data-word]');
      if (n) showWord(Number(n.dataset.word));
    });
    list.addEventListener('mouseleave', () => showWord(captionState.selected ?? -1));
    list.addEventListener('focusin', (e) => {
      const n = e.target.closest('[data-word]');
      if (n) showWord(Number(n.dataset.word));
    });
    list.addEventListener('click', (e) => {
      const n = e.target.closest('[data-word]');
      if (n) selectWord(Number(n.dataset.word));
    });
    list.addEventListener('keydown', (e) => {
      const n = e.target.closest('figure[data-word]');
      if (n && (e.key === 'Enter' || e.key === ' ')) { selectWord(Number(n.dataset.word)); e.preventDefault(); }
    });
  }
  $('show-grid').addEventListener('change', () => { if (captionState.answer) showWord(captionState.shown); });
}

// Called by app.js once /health says the model reads images.
function enterImageMode(health) {
  captionState.health = health;
  document.body.dataset.mode = 'image';
  document.querySelectorAll('.text-mode').forEach((n) => { n.hidden = true; });
  document.querySelectorAll('.image-mode').forEach((n) => { n.hidden = false; });
  document.title = 'attn: where the captioner looks';
  $('tagline').textContent = 'Caption an image and see where the decoder looks for every word.';
  $('foot-routes').textContent = 'POST /v1/caption';
  if (health.grid && health.image_size) {
    $('caption-hint').append(` This model sees every picture resized to ${health.image_size[1]} x ${health.image_size[0]} ` +
                             `pixels and attends over a grid of ${health.grid[0]} x ${health.grid[1]} cells.`);
  }
  wireCaption();
}
