// Attention maps by layer and head, for the page of `attn serve` (app.js).
// A model whose maps have layers and heads (the Transformer) names them
// "<family>.layer<l>.head<h>" and "<family>.layer<l>.mean" (l, h 1-based;
// src/attn/models/attention_maps.h): "cross" for the decoder's
// cross-attention (GET /health "attention_maps"), "self" for the encoder's
// self-attention ("encoder_attention_maps"). For such a model the page shows
// a layer select and a head select (with "mean") instead of the flat map
// select, and a panel with the encoder's self-attention (source x source)
// with its own layer and head selects.
//
// Stable hooks (tests/browser/transformer.test.mjs):
//   #layer-field, #attention-layer, #attention-head   the cross-attention's layer and head
//                              (shown instead of #map-field for a layered model); changing
//                              either asks again for the current sentence
//   #heatmap-title             the title of the map the heatmap shows ("cross-attention, layer 2, head 1")
//   #self-panel                shown when /health lists encoder_attention_maps
//   #self-layer, #self-head    the encoder map; changing either asks for the explanation again
//   #self-title                the map's title; #self-heatmap: a table like #heatmap, rows and
//                              columns the source tokens, td[data-row][data-col][data-weight]
'use strict';

const LAYERED_MAP = /^(.+)\.layer(\d+)\.(?:head(\d+)|mean)$/;

// The layers and heads of `maps` (a /health list, the default first) when the
// default is a layered map, else null: {family, layers, heads, layer, head}
// with the default's layer and head ("mean" or a number).
function mapGrid(maps) {
  const first = Array.isArray(maps) && maps.length ? LAYERED_MAP.exec(maps[0]) : null;
  if (!first) return null;
  let layers = 0, heads = 0;
  for (const name of maps) {
    const m = LAYERED_MAP.exec(name);
    if (!m || m[1] !== first[1]) continue;
    layers = Math.max(layers, Number(m[2]));
    if (m[3]) heads = Math.max(heads, Number(m[3]));
  }
  return { family: first[1], layers, heads, layer: Number(first[2]), head: first[3] ?? 'mean' };
}

function layeredMapName(family, layer, head) {
  return `${family}.layer${layer}.${head === 'mean' ? 'mean' : `head${head}`}`;
}

// A figure's title for a map name (as models::map_title): "cross-attention,
// layer 2, mean of 4 heads"; a name that is not layered is its own title.
function mapTitle(name, grid) {
  const m = name ? LAYERED_MAP.exec(name) : null;
  if (!m) return name ?? '';
  const family = m[1] === 'cross' ? 'cross-attention' : m[1] === 'self' ? 'encoder self-attention' : m[1];
  const head = m[3] ? `head ${m[3]}` : grid && grid.family === m[1] ? `mean of ${grid.heads} heads` : 'mean over the heads';
  return `${family}, layer ${m[2]}, ${head}`;
}

// Fills a layer select and a head select from `grid` (the default's layer and head selected).
function fillLayerHead(layerId, headId, grid) {
  const layers = Array.from({ length: grid.layers }, (_, i) => String(i + 1));
  const heads = ['mean', ...Array.from({ length: grid.heads }, (_, i) => String(i + 1))];
  $(layerId).replaceChildren(...layers.map((l) => el('option', { value: l, text: `layer ${l}` })));
  $(headId).replaceChildren(...heads.map((h) => el('option', { value: h, text: h === 'mean' ? 'mean of the heads' : `head ${h}` })));
  $(layerId).value = String(grid.layer);
  $(headId).value = String(grid.head);
}

const mapsState = { cross: null, self: null };  // the grids of /health's two lists (null: not layered / none)

// From GET /health: the cross-attention's layer and head selects replace the
// flat one when its maps are layered; the self-attention panel is shown when
// the model has encoder maps.
function setUpLayeredMaps(health) {
  mapsState.cross = mapGrid(health.attention_maps);
  mapsState.self = mapGrid(health.encoder_attention_maps);
  $('layer-field').hidden = !mapsState.cross;
  if (mapsState.cross) {
    $('map-field').hidden = true;
    fillLayerHead('attention-layer', 'attention-head', mapsState.cross);
  }
  $('self-panel').hidden = !mapsState.self;
  if (mapsState.self) fillLayerHead('self-layer', 'self-head', mapsState.self);
}

// The cross-attention map the layer and head selects name, or undefined when they are hidden.
function chosenLayeredMap() {
  const g = mapsState.cross;
  return g ? layeredMapName(g.family, $('attention-layer').value, $('attention-head').value) : undefined;
}

// The encoder map the self-attention selects name, or null for a model without one.
function chosenSelfMap() {
  const g = mapsState.self;
  return g ? layeredMapName(g.family, $('self-layer').value, $('self-head').value) : null;
}

// A request body with "self_attention_map" when the model has encoder maps.
function withSelfMap(body) {
  const map = chosenSelfMap();
  return map === null ? body : { ...body, self_attention_map: map };
}

// The heatmap's title: the map the explanation names (its answer's
// "attention_map"), or `fallback`.
function showHeatmapTitle(name) {
  $('heatmap-title').textContent = name ? mapTitle(name, mapsState.cross) : '';
}

// The explanation's "self_attention" ({map, weights [S][S]}) as a table:
// rows the source tokens attending, columns the source tokens attended to.
function drawSelfAttention(answer) {
  const table = $('self-heatmap');
  table.querySelectorAll('thead, tbody').forEach((n) => n.remove());
  const self = answer?.self_attention;
  $('self-title').textContent = self ? mapTitle(self.map, mapsState.self) : '';
  if (!self) return;
  table.append(el('thead', {}, [matrixHead(answer.src_tokens)]),
               el('tbody', {}, answer.src_tokens.map((tok, r) =>
                 matrixRow(r, el('th', { scope: 'row' }, [tokenNode(tok)]), tok, answer.src_tokens, self.weights[r]))));
}

function wireLayeredMaps() {
  for (const id of ['attention-layer', 'attention-head']) $(id).addEventListener('change', () => { if (state.translation) translate(); });
  for (const id of ['self-layer', 'self-head']) $(id).addEventListener('change', reexplain);
}
