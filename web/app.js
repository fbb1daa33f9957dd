// The page of `attn serve`: translate a sentence, draw its attention weights as
// an interactive heatmap, and step through the decoder's steps (POST /v1/explain).
// Plain browser JavaScript, no build step, no requests beyond the serving host.
// For a model that reads images (GET /health "input": "image") the page
// switches to caption.js's image mode instead (body[data-mode="image"]); the
// helpers below ($, el, fmt, apiRequest, showErrors) are shared with it.
//
// Stable hooks (the browser test tests/browser/page.test.mjs finds the page by these):
//   body[data-status]          "idle" | "loading" | "done" | "error" (the last request's outcome)
//   body[data-mode]            "text" | "image" (set from GET /health once it answers)
//   #src, #beam, #translate    the sentence, the beam size (1-10), the button (Enter in #src submits too)
//   #attention-map             a select of GET /health's "attention_maps" (its first, the model's
//                              default, selected); #map-field, around it, is shown only when the
//                              model has more than one map, and only then do requests name one
//   #error                     the server's JSON "error" (and "field"); hidden when there is none
//   #translation               the translation; #translation-meta: score and beam
//   #heatmap                   a table: thead th[data-col] = source tokens; tbody tr[data-row] = one row
//                              per row of the API's "weights" (target tokens, then EOS when finished),
//                              its th holds button.tgt[data-row][aria-pressed]; cells
//                              td[data-row][data-col][data-weight] (data-weight: the API's number as is)
//   tr.is-selected             the row of the clicked target token (the others get .is-dimmed);
//                              #row-summary names its source token with the most weight
//   #readout                   the hovered / focused cell: [data-row][data-col][data-weight],
//                              .readout-src, .readout-tgt (tokens), .readout-weight (weight, 4 decimals)
//   #explain-prev, #explain-next, #explain-play   step buttons; #explain-words: whole-word view
//   #explain-step[data-step]   the current step t (1-based; 0 before any explanation)
//   #explain-weights           one .bar[data-col][data-weight][data-score] per source token at step t
//                              (data-score "null" where masked or outside a local window)
//   #explain-topk              li[data-token][data-prob] best first, li.is-chosen for the chosen word
//   #explain-chosen[data-token]  the word chosen at step t; #explain-output: the output up to step t
'use strict';

const EOS_LABEL = '</s>';
const WORD_START = '\u2581';  // SentencePiece's "▁": the piece starts a word
const $ = (id) => document.getElementById(id);

const state = {
  requestId: 0,        // answers to an older request are dropped
  translation: null,   // POST /v1/translate's answer
  explanation: null,   // POST /v1/explain's answer
  text: '', beam: 1,   // what the current answers are for
  attentionMap: null,  // the map the current answers show (null: the model's own, not named)
  step: 0,             // 1-based step of the explain view
  selectedRow: null,   // heatmap row lit by a click
  playTimer: null,
};

// ---- small DOM helpers ----

function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// A token as shown: SentencePiece's word-start mark is kept (it tells pieces from
// words) but drawn faintly, so "▁apple" + "s" reads as "apple" + "s".
function tokenNode(token, cls = 'tok') {
  const node = el('span', { class: cls });
  if (token.startsWith(WORD_START)) {
    node.append(el('span', { class: 'ws', text: WORD_START }), token.slice(WORD_START.length));
  } else {
    node.textContent = token;
  }
  return node;
}

const fmt = (x, digits) => (x === null || x === undefined ? '–' : Number(x).toFixed(digits));

// White (0) to deep blue (1): one ramp for the heatmap, the bars and the legend.
function weightColour(w) {
  const lo = [247, 249, 252], hi = [23, 52, 130];
  const t = Math.sqrt(Math.max(0, Math.min(1, w)));  // sqrt: small weights stay visible
  const c = lo.map((l, i) => Math.round(l + (hi[i] - l) * t));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// ---- the server ----

class ApiError extends Error {
  constructor(message, field) { super(message); this.field = field; }
}

async function postJson(path, body) {
  return apiRequest(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
}

// fetch(path, init), its JSON answer returned; a failure (no answer, not JSON,
// an HTTP error) thrown as an ApiError with the server's "error" and "field".
async function apiRequest(path, init) {
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(`cannot reach the server (${e.message})`, null);
  }
  const text = await res.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new ApiError(`${path}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`, null);
  }
  if (!res.ok || data.error !== undefined) throw new ApiError(data.error ?? `${path}: HTTP ${res.status}`, data.field ?? null);
  return data;
}

function showErrors(errors, box = $('error')) {
  box.replaceChildren();
  for (const { what, error } of errors) {
    const line = el('p', { class: 'error-line' });
    line.append(el('strong', { text: `${what}: ` }), el('span', { class: 'error-message', text: error.message }));
    if (error.field) line.append(el('span', { class: 'error-field', text: ` (field "${error.field}")` }));
    box.append(line);
  }
  box.hidden = errors.length === 0;
}

// ---- translating ----

// The map the select `selectId` names, or null when its field `fieldId` is
// hidden (a model of one map: requests then leave the choice to the server);
// for a model whose maps have layers and heads, the layer and head selects'
// map (maps.js).
function chosenMap(fieldId, selectId) {
  const layered = fieldId === 'map-field' ? chosenLayeredMap() : undefined;
  if (layered !== undefined) return layered;
  return $(fieldId).hidden ? null : $(selectId).value;
}

// A request body with "attention_map" when a map is named.
function withMap(body, map) {
  return map === null ? body : { ...body, attention_map: map };
}

// Fills the select `selectId` with the model's maps (GET /health
// "attention_maps", the default first) and shows its field when there is a choice.
function fillMaps(fieldId, selectId, maps) {
  const list = Array.isArray(maps) ? maps : [];
  $(selectId).replaceChildren(...list.map((m) => el('option', { value: m, text: m })));
  $(fieldId).hidden = list.length < 2;
}

function readBeam() {
  const raw = $('beam').value.trim();
  const beam = Number(raw);
  if (!/^\d+$/.test(raw) || beam < 1 || beam > 10) return null;
  return beam;
}

async function translate(event) {
  event?.preventDefault();
  const beam = readBeam();
  if (beam === null) {
    showErrors([{ what: 'Beam size', error: new ApiError('must be a whole number from 1 to 10', 'beam') }]);
    $('beam').focus();
    return;
  }
  const text = $('src').value;
  const map = chosenMap('map-field', 'attention-map');
  const id = ++state.requestId;
  setBusy(true);
  const [tr, ex] = await Promise.allSettled([
    postJson('/v1/translate', withMap({ text, beam, alignments: true }, map)),
    postJson('/v1/explain', withSelfMap(withMap({ text, beam, top_k: 5, words: $('explain-words').checked }, map))),
  ]);
  if (id !== state.requestId) return;
  setBusy(false);
  state.text = text;
  state.beam = beam;
  state.attentionMap = map;
  const errors = [];
  if (tr.status === 'fulfilled') showTranslation(tr.value, beam); else { errors.push({ what: 'Translate', error: tr.reason }); showTranslation(null); }
  if (ex.status === 'fulfilled') showExplanation(ex.value); else { errors.push({ what: 'Explain', error: ex.reason }); showExplanation(null); }
  showHeatmapTitle(ex.status === 'fulfilled' ? ex.value.attention_map : map);
  showErrors(errors);
  document.body.dataset.status = errors.length ? 'error' : 'done';
}

// The whole-word switch asks for the same sentence's explanation again.
async function reexplain() {
  if (!state.explanation) return;
  const id = ++state.requestId;
  setBusy(true);
  try {
    const ex = await postJson('/v1/explain', withSelfMap(withMap({ text: state.text, beam: state.beam, top_k: 5,
                                                                  words: $('explain-words').checked }, state.attentionMap)));
    if (id !== state.requestId) return;
    showExplanation(ex);
    showErrors([]);
    document.body.dataset.status = 'done';
  } catch (e) {
    if (id !== state.requestId) return;
    showErrors([{ what: 'Explain', error: e }]);
    document.body.dataset.status = 'error';
  } finally {
    if (id === state.requestId) setBusy(false);
  }
}

function setBusy(busy) {
  document.body.dataset.status = busy ? 'loading' : document.body.dataset.status;
  $('translate').disabled = busy;
  $('translate').textContent = busy ? 'Translating…' : 'Translate';
  document.querySelector('main').setAttribute('aria-busy', String(busy));
}

function showTranslation(answer, beam) {
  state.translation = answer;
  const out = $('translation');
  if (!answer) {
    out.replaceChildren(el('span', { class: 'empty', text: 'No translation.' }));
    $('translation-meta').textContent = '';
    drawHeatmap(null);
    return;
  }
  if (answer.translation === '') out.replaceChildren(el('span', { class: 'empty', text: '(empty)' }));
  else out.textContent = answer.translation;
  $('translation-meta').textContent =
      `beam ${beam} · score ${fmt(answer.score, 3)} · ${answer.src_tokens.length} source tokens, ${answer.tgt_tokens.length} target tokens`;
  drawHeatmap(answer);
}

// ---- the heatmap ----

// Row labels: the target tokens, then EOS for the extra row of a finished translation.
function rowLabels(answer) {
  return answer.weights.map((_, r) => (r < answer.tgt_tokens.length ? answer.tgt_tokens[r] : EOS_LABEL));
}

function drawHeatmap(answer) {
  const table = $('heatmap');
  table.querySelectorAll('thead, tbody').forEach((n) => n.remove());
  state.selectedRow = null;
  showRowSummary();
  resetReadout();
  if (!answer || !Array.isArray(answer.weights)) return;
  const body = el('tbody');
  rowLabels(answer).forEach((label, r) => {
    const button = el('button', { type: 'button', class: 'tgt', 'data-row': r, 'aria-pressed': 'false',
                                  title: 'Light up this row' }, [tokenNode(label)]);
    if (label === EOS_LABEL) button.classList.add('eos');
    body.append(matrixRow(r, el('th', { scope: 'row' }, [button]), label, answer.src_tokens, answer.weights[r]));
  });
  table.append(el('thead', {}, [matrixHead(answer.src_tokens)]), body);
  // cells as large as the width allows: short sentences get big cells
  const cols = answer.src_tokens.length;
  table.style.setProperty('--cell', cols <= 12 ? '44px' : cols <= 24 ? '34px' : '26px');
  const first = table.querySelector('td');
  if (first) first.tabIndex = 0;  // one tab stop: the arrow keys move inside
}

// A weight table's head row: a corner, then one th.src[data-col] per source token.
function matrixHead(srcTokens) {
  const head = el('tr', {}, [el('th', { class: 'corner', scope: 'col' }, [el('span', { class: 'visually-hidden', text: 'row \\ column' })])]);
  srcTokens.forEach((tok, c) => head.append(el('th', { scope: 'col', class: 'src', 'data-col': c }, [tokenNode(tok, 'tok vertical')])));
  return head;
}

// Row r of a weight table: its head `th` (labelled `label`), then one coloured
// td[data-row][data-col][data-weight] per weight (data-weight: the API's number as is).
function matrixRow(r, th, label, srcTokens, weights) {
  const row = el('tr', { 'data-row': r }, [th]);
  weights.forEach((w, c) => {
    const cell = el('td', { 'data-row': r, 'data-col': c, 'data-weight': String(w), tabindex: '-1',
                            'aria-label': `${label} to ${srcTokens[c]}: ${fmt(w, 4)}` });
    cell.style.backgroundColor = weightColour(w);
    row.append(cell);
  });
  return row;
}

function cellAt(r, c) {
  return $('heatmap').querySelector(`td[data-row="${r}"][data-col="${c}"]`);
}

function resetReadout() {
  const ro = $('readout');
  for (const k of ['row', 'col', 'weight']) delete ro.dataset[k];
  ro.replaceChildren(el('span', { class: 'empty', text: 'Hover a cell.' }));
}

// The readout names the cell's target token, its source token and the weight.
function showCell(cell) {
  const answer = state.translation;
  const r = Number(cell.dataset.row), c = Number(cell.dataset.col);
  const ro = $('readout');
  Object.assign(ro.dataset, { row: r, col: c, weight: cell.dataset.weight });
  const w = Number(cell.dataset.weight);
  ro.replaceChildren(
      el('span', { class: 'label', text: 'target' }), tokenNode(rowLabels(answer)[r], 'tok readout-tgt'),
      el('span', { class: 'label', text: 'source' }), tokenNode(answer.src_tokens[c], 'tok readout-src'),
      el('span', { class: 'label', text: 'weight' }), el('span', { class: 'readout-weight', text: fmt(w, 4) }),
      el('span', { class: 'readout-track' }, [el('span', { class: 'readout-fill', style: `width: ${(100 * w).toFixed(1)}%` })]));
  const table = $('heatmap');
  table.querySelectorAll('.is-cross').forEach((n) => n.classList.remove('is-cross'));
  table.querySelector(`th.src[data-col="${c}"]`)?.classList.add('is-cross');
  table.querySelector(`button.tgt[data-row="${r}"]`)?.classList.add('is-cross');
}

// Under the readout: the lit row's source token with the most weight.
function showRowSummary() {
  const box = $('row-summary');
  const r = state.selectedRow;
  box.hidden = r === null;
  if (r === null) return;
  const answer = state.translation;
  const row = answer.weights[r];
  const best = row.indexOf(Math.max(...row));
  box.replaceChildren(tokenNode(rowLabels(answer)[r], 'tok'), ' looks most at ', tokenNode(answer.src_tokens[best], 'tok'),
                      ` (${fmt(row[best], 4)})`);
}

function selectRow(r) {
  state.selectedRow = state.selectedRow === r ? null : r;
  const table = $('heatmap');
  table.classList.toggle('has-selection', state.selectedRow !== null);
  table.querySelectorAll('tbody tr').forEach((tr) => {
    const on = Number(tr.dataset.row) === state.selectedRow;
    tr.classList.toggle('is-selected', on);
    tr.classList.toggle('is-dimmed', state.selectedRow !== null && !on);
    tr.querySelector('button.tgt').setAttribute('aria-pressed', String(on));
  });
  showRowSummary();
}

// Arrow keys, Home and End move the one focusable cell; Enter lights its row.
function heatmapKey(event) {
  const cell = event.target.closest('td[data-row]');
  if (!cell) return;
  const answer = state.translation;
  let r = Number(cell.dataset.row), c = Number(cell.dataset.col);
  const rows = answer.weights.length, cols = answer.src_tokens.length;
  switch (event.key) {
    case 'ArrowUp': r = Math.max(0, r - 1); break;
    case 'ArrowDown': r = Math.min(rows - 1, r + 1); break;
    case 'ArrowLeft': c = Math.max(0, c - 1); break;
    case 'ArrowRight': c = Math.min(cols - 1, c + 1); break;
    case 'Home': c = 0; break;
    case 'End': c = cols - 1; break;
    case 'Enter': case ' ': selectRow(r); event.preventDefault(); return;
    default: return;
  }
  event.preventDefault();
  const next = cellAt(r, c);
  cell.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

function wireHeatmap() {
  const table = $('heatmap');
  table.addEventListener('mouseover', (e) => { const cell = e.target.closest('td[data-row]'); if (cell) showCell(cell); });
  table.addEventListener('focusin', (e) => { const cell = e.target.closest('td[data-row]'); if (cell) showCell(cell); });
  table.addEventListener('click', (e) => {
    const button = e.target.closest('button.tgt');
    if (button) selectRow(Number(button.dataset.row));
  });
  table.addEventListener('keydown', heatmapKey);
}

// ---- the step-by-step view ----

function showExplanation(answer) {
  stopPlaying();
  state.explanation = answer && Array.isArray(answer.steps) && answer.steps.length ? answer : null;
  $('explain-view').hidden = !state.explanation;
  $('explain-empty').hidden = !!state.explanation;
  if (!state.explanation) {
    $('explain-info').textContent = '';
    drawSelfAttention(null);
    setStep(0);
    return;
  }
  const a = state.explanation;
  const window = a.window ? `, ${a.window.kind} window D = ${a.window.D}` : '';
  $('explain-info').textContent = `${a.model}, ${a.score} scores${window}, beam ${a.beam}`;
  drawSelfAttention(a);
  drawBars(a.src_tokens);
  setStep(1);
}

// One bar per source token, made once per explanation so that stepping only
// changes their heights (the CSS transition animates the weights' moves).
function drawBars(srcTokens) {
  const bars = $('explain-weights');
  bars.replaceChildren();
  bars.classList.toggle('many', srcTokens.length > 16);
  srcTokens.forEach((tok, c) => {
    bars.append(el('div', { class: 'bar', 'data-col': c }, [
      el('span', { class: 'bar-value' }),
      el('div', { class: 'bar-track' }, [el('div', { class: 'bar-fill' })]),
      tokenNode(tok, 'tok bar-token'),
      el('span', { class: 'bar-score' }),
    ]));
  });
  bars.append(el('div', { class: 'position-marker', hidden: '' }));
}

function setStep(t) {
  const a = state.explanation;
  const T = a ? a.steps.length : 0;
  state.step = t;
  const label = $('explain-step');
  label.dataset.step = String(t);
  label.textContent = T ? `Step ${t} of ${T}` : 'Step –';
  $('explain-prev').disabled = t <= 1;
  $('explain-next').disabled = t >= T;
  $('explain-play').disabled = T <= 1;
  if (!T) return;
  const step = a.steps[t - 1];
  drawStepBars(step, a.src_tokens.length);
  drawOutput(a, t);
  drawTopK(step);
  drawFacts(step);
}

function drawStepBars(step, srcLen) {
  const [lo, hi] = step.window_range ?? [0, srcLen];
  $('explain-weights').querySelectorAll('.bar').forEach((bar) => {
    const c = Number(bar.dataset.col);
    const w = step.weights[c];
    const s = step.scores ? step.scores[c] : null;  // null scores: the model gives none for this map
    bar.dataset.weight = String(w);
    bar.dataset.score = s === null ? 'null' : String(s);
    const outside = c < lo || c >= hi;
    const noScore = outside ? 'outside' : step.scores ? 'masked' : 'no score';  // null: outside a local window, or masked
    bar.classList.toggle('is-outside', outside || s === null);
    bar.querySelector('.bar-value').textContent = fmt(w, 2);
    const fill = bar.querySelector('.bar-fill');
    fill.style.height = `${(100 * w).toFixed(2)}%`;
    fill.style.backgroundColor = weightColour(Math.max(w, 0.15));
    bar.querySelector('.bar-score').textContent = s === null ? noScore : fmt(s, 2);
    bar.title = `weight ${fmt(w, 4)}, score ${s === null ? noScore : fmt(s, 4)}`;
  });
  // local-p: the predicted source position p_t, as a marker under the bars
  const marker = $('explain-weights').querySelector('.position-marker');
  marker.hidden = step.position === null || step.position === undefined;
  if (!marker.hidden) {
    marker.style.left = `calc(${((step.position + 0.5) / srcLen) * 100}% - 6px)`;
    marker.title = `p_t = ${fmt(step.position, 2)}`;
  }
}

// The words chosen before step t, then step t's choice highlighted.
function drawOutput(a, t) {
  const out = $('explain-output');
  out.replaceChildren();
  a.steps.slice(0, t).forEach((s, i) => out.append(tokenNode(s.chosen, i === t - 1 ? 'tok is-current' : 'tok')));
}

function drawTopK(step) {
  const list = $('explain-topk');
  list.replaceChildren();
  for (const { token, prob } of step.top_k) {
    const li = el('li', { 'data-token': token, 'data-prob': String(prob) }, [
      tokenNode(token, 'tok topk-token'),
      el('span', { class: 'topk-track' }, [el('span', { class: 'topk-fill', style: `width: ${(100 * prob).toFixed(1)}%` })]),
      el('span', { class: 'topk-prob', text: fmt(prob, 3) }),
    ]);
    if (token === step.chosen) li.classList.add('is-chosen');
    list.append(li);
  }
  const chosen = $('explain-chosen');
  chosen.dataset.token = step.chosen;
  chosen.replaceChildren(el('span', { class: 'label', text: 'chosen' }), tokenNode(step.chosen, 'tok is-current'),
                         el('span', { class: 'meta', text: ` probability ${fmt(step.chosen_prob, 3)}` }));
}

function drawFacts(step) {
  const facts = [
    ['‖query‖', fmt(step.query_norm, 3), 'norm of the decoder state the scores read'],
    ['‖context‖', fmt(step.context_norm, 3), 'norm of the weighted sum of the source states'],
  ];
  if (step.position !== null && step.position !== undefined) facts.push(['p_t', fmt(step.position, 2), 'local-p: predicted source position']);
  if (step.window_range) facts.push(['window', `[${step.window_range[0]}, ${step.window_range[1]})`, 'source tokens the step may look at']);
  const dl = $('explain-facts');
  dl.replaceChildren();
  for (const [name, value, why] of facts) dl.append(el('dt', { title: why, text: name }), el('dd', { text: value }));
}

function stepBy(delta) {
  const a = state.explanation;
  if (!a) return;
  const t = Math.max(1, Math.min(a.steps.length, state.step + delta));
  if (t !== state.step) setStep(t);
}

function stopPlaying() {
  clearInterval(state.playTimer);
  state.playTimer = null;
  $('explain-play').setAttribute('aria-pressed', 'false');
  $('explain-play').textContent = 'Play';
}

// Play: one step every 0.9 s from the start (or on from here), stopping at the end.
function togglePlay() {
  if (state.playTimer) return stopPlaying();
  const a = state.explanation;
  if (!a) return;
  if (state.step >= a.steps.length) setStep(1);
  $('explain-play').setAttribute('aria-pressed', 'true');
  $('explain-play').textContent = 'Pause';
  state.playTimer = setInterval(() => {
    stepBy(1);
    if (state.step >= a.steps.length) stopPlaying();
  }, 900);
}

function wireExplain() {
  $('explain-prev').addEventListener('click', () => { stopPlaying(); stepBy(-1); });
  $('explain-next').addEventListener('click', () => { stopPlaying(); stepBy(1); });
  $('explain-play').addEventListener('click', togglePlay);
  $('explain-words').addEventListener('change', reexplain);
  $('explain').querySelector('.stepper').addEventListener('keydown', (e) => {
    if (e.target.tagName !== 'BUTTON') return;
    if (e.key === 'ArrowLeft') { stopPlaying(); stepBy(-1); e.preventDefault(); }
    if (e.key === 'ArrowRight') { stopPlaying(); stepBy(1); e.preventDefault(); }
  });
}

// ---- start ----

// The legend's ramp is drawn with the heatmap's own colour function.
function drawLegend() {
  const stops = Array.from({ length: 11 }, (_, i) => `${weightColour(i / 10)} ${i * 10}%`);
  document.querySelector('#legend .legend-ramp').style.background = `linear-gradient(to right, ${stops.join(', ')})`;
}

// /health names the model, and says whether it reads text or images (then the
// page turns to its image mode, caption.js). Without an answer the page stays a
// translation page.
async function showModel() {
  let health;
  try {
    const res = await fetch('/health');
    health = await res.json();
  } catch {
    return;
  }
  if (health.model) $('model-info').textContent = `model: ${health.model}${health.type ? ` (${health.type})` : ''}`;
  fillMaps('map-field', 'attention-map', health.attention_maps);
  fillMaps('caption-map-field', 'caption-attention-map', health.attention_maps);
  setUpLayeredMaps(health);
  if (health.input === 'image') enterImageMode(health);
}

document.addEventListener('DOMContentLoaded', () => {
  $('translate-form').addEventListener('submit', translate);
  wireHeatmap();
  wireExplain();
  wireLayeredMaps();
  drawLegend();
  showModel();
});
