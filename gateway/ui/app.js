// fencegw leader timeline: reads the audit from the control API and draws,
// per resource, who held which epoch when, how each grant ended, and the
// writes the gateway refused. Everything shown comes from the API answers;
// the page writes text with textContent and DOM calls only, never HTML.
'use strict';
// ---- Settings and state ------------------------------------------------

const POLL_MS = 2000; // how often the audit is read again
const PAGE_LIMIT = 1000; // entries per audit request (the API's maximum)
const NAMES_PAGE = 100; // resource names listed at first, and added by "More names"
const RERENDER_MS = 30000; // redraw unchanged data this often (the "now" line)
const KEY_STORE = 'fencegw.apiKey'; // sessionStorage item holding the API key
// The control API's root: the page lives at <root>ui/.
const API = location.pathname.replace(/ui\/[^/]*$/, '');

const state = {
  traceURL: '', // from config.json: template with {trace_id}, or ''
  seq: 0, // number of the latest refresh; older answers are dropped
  timer: 0, // the next poll
  sig: '', // the data last drawn, as JSON, to skip identical redraws
  drawnAt: 0,
  data: null, // the data last drawn
  selected: null, // the resource shown
  prefix: '', // the resource list's filter (names beginning with it)
  namesWanted: NAMES_PAGE, // how many names the resource list shows
};

const $ = (id) => document.getElementById(id);

// ---- DOM helpers ------------------------------------------------------

const SVGNS = 'http://www.w3.org/2000/svg';

// el creates an element (SVG when ns is given) with attributes and text.
function el(tag, attrs, parent, text, ns) {
  const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
const svg = (tag, attrs, parent, text) => el(tag, attrs, parent, text, SVGNS);

// mark makes a focusable, self-describing SVG group: Tab reaches it, a screen
// reader reads its aria-label, a mouse hover shows the same text as <title>.
function mark(parent, kind, key, lines) {
  const g = svg('g', {
    class: 'mark mark-' + kind, tabindex: 0, role: 'img',
    'aria-label': lines.join('; '), 'data-kind': kind, 'data-key': key,
  }, parent);
  svg('title', {}, g, lines.join('\n'));
  return g;
}

const iso = (t) => (t == null || !isFinite(t) ? '—' : new Date(t).toISOString());
const isoCell = (t) => iso(t).replace('T', ' '); // wraps between date and time
const time = (s) => (s ? Date.parse(s) : NaN);
const orDash = (v) => (v === undefined || v === null || v === '' ? '—' : String(v));

// ---- HTTP -------------------------------------------------------------

class HTTPError extends Error {
  constructor(status, detail) {
    super(`HTTP ${status}${detail ? ': ' + detail : ''}`);
    this.status = status;
  }
}

// getJSON fetches a control API path (relative to its root), with the
// stored API key, and returns the parsed body or throws an HTTPError.
async function getJSON(path) {
  const headers = { Accept: 'application/json' };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = 'Bearer ' + key;
  const res = await fetch(path, { headers, cache: 'no-store', credentials: 'same-origin' });
  if (!res.ok) {
    let detail = '';
    try { const p = await res.json(); detail = p.detail || p.title || ''; } catch (e) { /* not JSON */ }
    throw new HTTPError(res.status, detail);
  }
  return res.json();
}

// optional fetches live state that the key may not see or that may not
// exist: 401, 403 and 404 give {status} instead of an error.
async function optional(path) {
  try {
    return { value: await getJSON(path) };
  } catch (e) {
    if (e instanceof HTTPError && [401, 403, 404].includes(e.status)) return { status: e.status };
    throw e;
  }
}

// auditPage reads the newest page of an audit list; more tells whether the
// API holds older entries that were not read.
async function auditPage(kind, params) {
  const q = new URLSearchParams({ limit: PAGE_LIMIT, ...params });
  const body = await getJSON(`${API}v1/audit/${kind}?${q}`);
  return { items: body[kind === 'leases' ? 'events' : 'rejections'] || [], more: Boolean(body.next_cursor) };
}

// resourceNames reads the audit's names that begin with prefix from
// GET /v1/audit/resources (the whole audit, not a page of entries), page
// by page, until wanted names are read or none is left.
async function resourceNames(prefix, wanted) {
  const names = [];
  let cursor = '';
  do {
    const q = new URLSearchParams({ limit: Math.min(PAGE_LIMIT, wanted - names.length) });
    if (prefix) q.set('prefix', prefix);
    if (cursor) q.set('cursor', cursor);
    const body = await getJSON(`${API}v1/audit/resources?${q}`);
    for (const r of body.resources || []) names.push(r.name);
    cursor = body.next_cursor || '';
  } while (cursor && names.length < wanted);
  return { names, more: Boolean(cursor) };
}

// ---- Loading ----------------------------------------------------------

// selectedFromHash reads #resource=NAME.
const selectedFromHash = () => new URLSearchParams(location.hash.slice(1)).get('resource');

// refresh reads the audit (and the selected resource's live state) and
// draws it when it changed.
async function refresh() {
  const seq = ++state.seq;
  const [leases, refusals, listed] = await Promise.all([auditPage('leases', {}), auditPage('rejections', {}),
    resourceNames(state.prefix, state.namesWanted)]);
  // The names come from the whole audit; what the newest entries say
  // about them is added where they say anything.
  const recent = new Map(summarize(leases.items, refusals.items).map((r) => [r.name, r]));
  const resources = listed.names.map((name) => recent.get(name) || { name, epoch: null, older: true, refused: 0 });
  // The selection: the hash's, else the one shown so far, else the first.
  const kept = resources.some((r) => r.name === state.selected) ? state.selected : null;
  const selected = selectedFromHash() || kept || (resources[0] && resources[0].name) || null;
  state.selected = selected;
  const data = { resources, moreNames: listed.more, selected, events: [], refusals: [], more: false, lease: null, fence: null };
  if (selected !== null) {
    const enc = encodeURIComponent(selected);
    // The unfiltered pages hold the whole history when nothing is older;
    // otherwise ask for this resource's own page.
    const [l, r, lease, fence] = await Promise.all([
      leases.more ? auditPage('leases', { name: selected }) : null,
      refusals.more ? auditPage('rejections', { resource: selected }) : null,
      optional(`${API}v1/leases/${enc}`),
      optional(`${API}v1/fences/${enc}`),
    ]);
    data.events = l ? l.items : leases.items.filter((e) => e.name === selected);
    data.refusals = r ? r.items : refusals.items.filter((e) => e.resource === selected);
    data.more = Boolean((l && l.more) || (r && r.more));
    Object.assign(data, { lease, fence });
  }
  if (seq !== state.seq) return; // a newer refresh started meanwhile
  const sig = JSON.stringify(data);
  if (sig !== state.sig || Date.now() - state.drawnAt > RERENDER_MS) {
    state.sig = sig;
    draw(data);
  }
  $('updated').textContent = 'Last read ' + iso(Date.now()) + '; updates every 2 s.';
}

// poll runs refresh every POLL_MS until an API key is needed.
async function poll() {
  clearTimeout(state.timer);
  const seq = state.seq + 1;
  try {
    await refresh();
    setStatus('Live: the audit is read every 2 seconds.');
  } catch (e) {
    if (seq !== state.seq) return; // a newer poll runs: its answer counts
    if (e instanceof HTTPError && (e.status === 401 || e.status === 403)) {
      askForKey(e);
      return; // resumes when a key is entered
    }
    if (!(e instanceof HTTPError)) console.error(e); // unreachable, or a bug of the page
    setStatus('Cannot read the audit (' + e.message + '); retrying.');
  }
  if (seq === state.seq) state.timer = setTimeout(poll, POLL_MS);
}

// setStatus announces a change of state (not every poll: it is aria-live).
function setStatus(text) {
  if ($('status').textContent !== text) $('status').textContent = text;
}

// ---- API key ----------------------------------------------------------

// askForKey hides the data and shows the key form, saying why.
function askForKey(err) {
  const had = sessionStorage.getItem(KEY_STORE);
  $('key-reason').textContent = err.status === 403
    ? 'The stored key is not an admin key (403). Enter an admin API key.'
    : had ? 'The stored key was refused (401). Enter an admin API key.'
      : 'The audit needs an admin API key (401).';
  setStatus('An admin API key is needed.');
  state.sig = ''; // draw again once a key is entered
  $('main').hidden = true; // show nothing the key may not see
  $('key-form').hidden = false;
  $('forget-key').hidden = !had;
}

// setupKeyForm stores an entered key (sessionStorage: this tab only) and
// forgets it on request; either way the audit is read again at once.
function setupKeyForm() {
  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = $('key-input').value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORE, key);
    $('key-input').value = '';
    $('key-form').hidden = true;
    $('forget-key').hidden = false;
    poll();
  });
  $('forget-key').addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORE);
    $('forget-key').hidden = true;
    poll();
  });
  $('forget-key').hidden = !sessionStorage.getItem(KEY_STORE);
}

// setupResourceSearch filters the resource list by a name prefix as it is
// typed, and lists more names on request; either reads the audit again.
function setupResourceSearch() {
  let typing = 0;
  $('resource-search').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      state.prefix = $('resource-search').value;
      state.namesWanted = NAMES_PAGE;
      poll();
    }, 200);
  });
  $('more-resources').addEventListener('click', () => {
    state.namesWanted += NAMES_PAGE;
    poll();
  });
}

// ---- Model ------------------------------------------------------------

// Epochs arrive as JSON strings of decimal digits, exact where a JavaScript
// number is not (above 2^53): kept and shown as strings, compared as BigInt.
const epochText = (v) => (v === null || v === undefined ? null : String(v));
const cmpEpoch = (a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

// summarize lists the resources the audit names, with the epoch and holder
// of each one's newest lease event and its number of refused writes.
function summarize(events, refusals) {
  const m = new Map();
  const get = (name) => m.get(name) || m.set(name, { name, epoch: null, holder: null, event: null, at: 0, refused: 0 }).get(name);
  for (const e of events) {
    const r = get(e.name);
    const at = time(e.last || e.first);
    const epoch = epochText(e.epoch);
    const order = r.epoch === null ? 1 : cmpEpoch(epoch, r.epoch);
    if (order > 0 || (order === 0 && at >= r.at)) {
      Object.assign(r, { epoch, holder: e.holder, event: e.event, at });
    }
  }
  // Refusals without a usable token are counted per route, without a resource.
  for (const x of refusals) if (x.resource) get(x.resource).refused += x.count || 1;
  return [...m.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// grantsOf folds one name's lease events into grants, one per epoch: from
// the acquire to the release, the lapse, or the expiry of the latest term.
function grantsOf(events, lease, now) {
  const byEpoch = new Map();
  for (const e of events) {
    const first = time(e.first), last = time(e.last || e.first);
    if (!isFinite(first)) continue; // the API always sends first: nothing to place otherwise
    const epoch = epochText(e.epoch);
    let g = byEpoch.get(epoch);
    if (!g) {
      g = { epoch, holder: orDash(e.holder), start: null, end: null, expires: null, ended: null,
        renewals: [], renewCount: 0, replicas: new Set(), lockDelay: 0, earliest: Infinity, latest: -Infinity, from: '' };
      byEpoch.set(epoch, g);
    }
    g.earliest = Math.min(g.earliest, first);
    g.latest = Math.max(g.latest, last);
    if (e.replica) g.replicas.add(e.replica);
    if (e.expires_at) g.expires = Math.max(g.expires || -Infinity, time(e.expires_at));
    if (e.event === 'acquired') {
      g.start = g.start === null ? first : Math.min(g.start, first); // a holder may acquire its live grant again
      g.holder = orDash(e.holder);
      g.lockDelay = e.lock_delay_seconds || g.lockDelay;
      g.from = e.previous_holder ? `took over from ${e.previous_holder} (epoch ${orDash(e.previous_epoch)})` : '';
    } else if (e.event === 'renewed') {
      g.renewals.push({ id: e.id, first, last, count: e.count || 1, replica: e.replica, expires: e.expires_at });
      g.renewCount += e.count || 1;
    } else if (e.event === 'released') {
      g.end = first;
      g.ended = 'released';
    } else if (e.event === 'expired') {
      g.end = first;
      g.ended = 'lapsed';
      g.how = 'lapsed (expired; recorded by the next acquire)';
      g.lockDelay = e.lock_delay_seconds || g.lockDelay;
    }
  }
  const grants = [...byEpoch.values()].sort((a, b) => cmpEpoch(a.epoch, b.epoch));
  for (const g of grants) {
    if (g.start === null) { g.start = g.earliest; g.clipped = true; } // acquire older than the loaded page
    if (g.ended) { g.how = g.how || g.ended; continue; }
    const live = lease && epochText(lease.epoch) === g.epoch ? lease : null;
    // The live expiry is the current term of a held grant; for a lapsed one
    // the store may report a conservative one (after a restart), so the
    // audit's counts unless it recorded none.
    if (live && live.expires_at && (live.held || g.expires === null)) g.expires = Math.max(g.expires || -Infinity, time(live.expires_at));
    if (live ? live.held : g.expires > now) {
      g.ended = 'held';
      g.end = g.expires === null ? now : g.expires;
      g.how = 'still held (term ends ' + iso(g.expires) + ')';
    } else if (g.expires !== null) {
      g.ended = 'lapsed';
      g.end = g.expires;
      g.how = 'lapsed at its expiry, not renewed or released';
    } else {
      g.ended = 'unknown';
      g.end = g.latest;
      g.how = 'unknown (no expiry recorded)';
    }
  }
  return grants;
}

// ---- Drawing ----------------------------------------------------------

// draw shows data, keeping the focused element and the scroll positions.
function draw(data) {
  state.data = data;
  state.drawnAt = Date.now();
  const focused = document.activeElement && document.activeElement.getAttribute('data-key');
  const box = $('timeline-scroll'), scrollLeft = box.scrollLeft, x = window.scrollX, y = window.scrollY;

  $('key-form').hidden = true;
  $('main').hidden = false;
  drawResources(data);
  drawDetail(data);

  box.scrollLeft = scrollLeft;
  window.scrollTo(x, y);
  if (focused) {
    const again = document.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

// drawResources lists the resources as links to #resource=NAME.
function drawResources(data) {
  const ul = $('resources');
  ul.replaceChildren();
  $('no-resources').hidden = data.resources.length > 0;
  $('no-resources').textContent = state.prefix
    ? 'No resource in the audit begins with this text.'
    : 'No lease events or refused writes in the audit yet.';
  $('more-resources').hidden = !data.moreNames;
  for (const r of data.resources) {
    const li = el('li', {}, ul);
    const a = el('a', { href: '#' + new URLSearchParams({ resource: r.name }), 'data-key': 'resource:' + r.name }, li);
    if (r.name === data.selected) a.setAttribute('aria-current', 'true');
    el('span', { class: 'name' }, a, r.name);
    const lease = r.older ? 'no recent entries'
      : r.epoch === null ? 'no lease events' : `epoch ${r.epoch} · ${r.holder} (${r.event})`;
    el('span', { class: 'sub' }, a, lease + (r.refused ? ` · ${r.refused} refused` : ''));
  }
}

// drawDetail shows the selected resource: live state, timeline, tables.
function drawDetail(data) {
  $('detail').hidden = data.selected === null;
  if (data.selected === null) return;
  $('resource-title').textContent = data.selected;

  const live = $('live');
  live.replaceChildren();
  const lease = data.lease && data.lease.value;
  const fence = data.fence && data.fence.value;
  const unavailable = (r) => (r && r.status === 404 ? 'none (404)' : r && r.status ? `not shown to this key (${r.status})` : '—');
  const rows = [
    ['Lease holder', lease ? `${lease.holder} · epoch ${lease.epoch} · ${lease.held ? 'held' : 'not held'} · expires ${iso(time(lease.expires_at))}` : unavailable(data.lease)],
    ['Fence (high-water mark)', fence ? `epoch ${fence.epoch}` : unavailable(data.fence)],
  ];
  for (const [k, v] of rows) { el('dt', {}, live, k); el('dd', {}, live, v); }

  const now = Date.now();
  const grants = grantsOf(data.events, lease, now);
  $('truncated').hidden = !data.more;
  $('truncated').textContent = `Only the newest ${PAGE_LIMIT} audit entries of this resource are shown; older ones are not loaded.`;
  drawTimeline(grants, data.refusals, now);
  drawGrantTable(grants);
  drawRefusalTable(data.refusals);
}

const GUTTER = 120, RIGHT = 40, AXIS = 34, ROW = 64, REFUSAL_ROW = 70;

// drawTimeline draws one row per holder with a band per grant, renewal
// ticks, lapse and lock-delay marks, and a row of refused writes.
function drawTimeline(grants, refusals, now) {
  const root = $('timeline');
  root.replaceChildren();
  // The time domain covers every band, lock-delay and refusal.
  const times = [];
  for (const g of grants) times.push(g.start, g.end, g.ended === 'lapsed' ? g.end + g.lockDelay * 1000 : g.end);
  for (const r of refusals) times.push(time(r.first), time(r.last || r.first));
  const finite = times.filter(isFinite);
  let t0 = Math.min(...finite), t1 = Math.max(...finite);
  if (!finite.length) { t0 = now - 60000; t1 = now; }
  if (t1 - t0 < 1000) { t0 -= 500; t1 += 500; }
  const pad = (t1 - t0) * 0.03;
  t0 -= pad; t1 += pad;

  const width = Math.max($('timeline-scroll').clientWidth - 2, 720);
  const plot = width - GUTTER - RIGHT;
  const x = (t) => GUTTER + ((t - t0) / (t1 - t0)) * plot;
  const holders = [...new Set(grants.map((g) => g.holder))];
  const height = AXIS + holders.length * ROW + REFUSAL_ROW;
  root.setAttribute('width', width);
  root.setAttribute('height', height);
  root.setAttribute('viewBox', `0 0 ${width} ${height}`);

  drawAxis(root, t0, t1, x, height);
  if (now >= t0 && now <= t1) {
    svg('line', { class: 'now', x1: x(now), x2: x(now), y1: AXIS - 6, y2: height - 4 }, root);
    svg('text', { class: 'now-label', x: x(now) + 3, y: AXIS - 8 }, root, 'now');
  }

  holders.forEach((h, i) => {
    const top = AXIS + i * ROW;
    svg('line', { class: 'row-rule', x1: 0, x2: width, y1: top, y2: top }, root);
    svg('text', { class: 'row-label', x: 6, y: top + 33 }, root, h);
  });
  for (const g of grants) drawGrant(root, g, AXIS + holders.indexOf(g.holder) * ROW, x);

  const top = AXIS + holders.length * ROW;
  svg('line', { class: 'row-rule', x1: 0, x2: width, y1: top, y2: top }, root);
  svg('text', { class: 'row-label', x: 6, y: top + 40 }, root, 'refused writes');
  for (const r of refusals) if (isFinite(time(r.first))) drawRefusal(root, r, top, x);
}

// drawAxis draws time ticks at a round step, labelled in UTC.
function drawAxis(root, t0, t1, x, height) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);
  const wanted = (x(t1) - x(t0)) / 110;
  const step = steps.find((s) => (t1 - t0) / s <= wanted) || 86400000 * Math.ceil((t1 - t0) / 86400000 / wanted);
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    svg('line', { class: 'tick', x1: x(t), x2: x(t), y1: AXIS - 4, y2: height }, root);
    const label = t1 - t0 < 86400000 ? iso(t).slice(11, 19) : iso(t).slice(5, 16).replace('T', ' ');
    svg('text', { class: 'tick-label', x: x(t), y: 14 }, root, label);
  }
}

// drawGrant draws one grant's band, its label, its end marker, its
// lock-delay and its renewals.
function drawGrant(root, g, top, x) {
  const x0 = x(g.start), x1 = Math.max(x(g.end), x0 + 3);
  const label = `${g.holder} · epoch ${g.epoch}`;
  const lines = [
    `Grant: ${g.holder}, epoch ${g.epoch}`,
    `from ${iso(g.start)}${g.clipped ? ' (acquire not in the loaded history)' : ''}${g.from ? ', ' + g.from : ''}`,
    `to ${iso(g.end)}`,
    `ended: ${g.how}${g.ended === 'lapsed' && g.lockDelay > 0 ? `, then lock-delay ${g.lockDelay} s` : ''}`,
    `renewals: ${g.renewCount}`,
    `replicas: ${[...g.replicas].join(', ') || '—'}`,
  ];
  const m = mark(root, 'grant', 'grant:' + g.epoch, lines);
  svg('rect', { class: `grant ${g.ended}`, x: x0, y: top + 18, width: x1 - x0, height: 22, rx: 3 }, m);
  // The label goes inside the band when it fits, above it otherwise.
  const t = svg('text', { class: 'band-label', x: x0 + 5, y: top + 34 }, m, label);
  if (t.getComputedTextLength() + 10 > x1 - x0) {
    t.setAttribute('y', top + 13);
    t.setAttribute('x', x0);
  }
  // How it ended, in words, under the band's end.
  const words = { lapsed: '✕ lapsed', released: 'released ■', held: 'held ▶', unknown: '?' }[g.ended];
  svg('text', { class: 'end-label ' + g.ended, x: x1, y: top + 55, 'text-anchor': 'end' }, m, words);

  if (g.ended === 'lapsed' && g.lockDelay > 0) {
    const d1 = x(g.end + g.lockDelay * 1000);
    const ld = mark(root, 'lock-delay', 'lock-delay:' + g.epoch, [
      `Lock-delay after epoch ${g.epoch} (${g.holder}) lapsed: ${g.lockDelay} s`,
      `from ${iso(g.end)}`, `to ${iso(g.end + g.lockDelay * 1000)}`,
      'no new grant of this name before its end',
    ]);
    svg('rect', { class: 'lock-delay', x: x1, y: top + 18, width: Math.max(d1 - x1, 3), height: 22 }, ld);
    svg('text', { class: 'lock-delay-label', x: x1 + 3, y: top + 55 }, ld, 'lock-delay');
  }

  for (const r of g.renewals) {
    const tm = mark(root, 'renewal', 'renewal:' + (r.id || g.epoch + ':' + r.first), [
      `${r.count} renewal${r.count === 1 ? '' : 's'} of epoch ${g.epoch} (${g.holder})`,
      `first ${iso(r.first)}`, `last ${iso(r.last)}`,
      `term then ends ${orDash(r.expires)}`, `replica ${orDash(r.replica)}`,
    ]);
    // A tick across the band's top edge at the latest renewal, a dotted
    // line back to the first one of the aggregate.
    if (r.last > r.first) svg('line', { class: 'renewal-span', x1: x(r.first), x2: x(r.last), y1: top + 14, y2: top + 14 }, tm);
    svg('line', { class: 'renewal', x1: x(r.last), x2: x(r.last), y1: top + 10, y2: top + 23 }, tm);
    svg('rect', { class: 'hit', x: x(r.last) - 4, y: top + 8, width: 8, height: 17 }, tm);
  }
}

// drawRefusal draws one aggregate of refused writes: a diamond sized by
// its count at its first time, a line to its last, and "decision ×count".
function drawRefusal(root, r, top, x) {
  const first = time(r.first), last = time(r.last || r.first);
  const lines = [
    `Refused write: ${r.decision}`,
    `presented epoch ${orDash(r.presented_epoch)}, current epoch ${orDash(r.current_epoch)}`,
    `count ${orDash(r.count)}, status ${orDash(r.status)}, replica ${orDash(r.replica)}, route ${orDash(r.route)}, holder ${orDash(r.holder)}`,
    `first ${iso(first)}`, `last ${iso(last)}`,
    `trace ids: ${(r.trace_ids || []).join(', ') || '—'}`,
  ];
  const m = mark(root, 'refusal', 'refusal:' + (r.id || r.first), lines);
  const cy = top + 40, size = 6 + Math.min(8, 2 * Math.log2(r.count || 1));
  if (last > first) svg('line', { class: 'refusal-span', x1: x(first), x2: x(last), y1: cy, y2: cy }, m);
  const cx = x(first);
  svg('path', { class: 'refusal', d: `M${cx} ${cy - size} L${cx + size} ${cy} L${cx} ${cy + size} L${cx - size} ${cy} Z` }, m);
  // The label: "presented→current decision ×count" (epochs when known).
  const epochs = r.presented_epoch != null || r.current_epoch != null ? `${r.presented_epoch ?? '?'}→${r.current_epoch ?? '?'} ` : '';
  svg('text', { class: 'refusal-label', x: cx, y: cy - size - 6, 'text-anchor': 'middle' }, m, `${epochs}${r.decision} ×${orDash(r.count)}`);
}

// ---- Tables -----------------------------------------------------------

// fillTable fills the table body id with one row per item (fill(tr, item)),
// or, without items, with one cell across colspan columns saying empty.
function fillTable(id, items, colspan, empty, fill) {
  const body = $(id);
  body.replaceChildren();
  if (!items.length) el('td', { colspan }, el('tr', {}, body), empty);
  for (const item of items) fill(el('tr', {}, body), item);
}

// drawGrantTable lists the grants drawn as bands.
function drawGrantTable(grants) {
  fillTable('grants', grants, 7, 'No lease events in the loaded audit.', (tr, g) => {
    el('td', {}, tr, String(g.epoch));
    el('td', {}, tr, g.holder);
    for (const at of [g.start, g.end]) el('td', { class: 'time' }, tr, isoCell(at));
    for (const v of [g.how, g.renewCount, [...g.replicas].join(', ') || '—']) el('td', {}, tr, String(v));
  });
}

// drawRefusalTable lists the refused writes, linking their trace ids.
function drawRefusalTable(refusals) {
  fillTable('refusals', refusals, 10, 'No refused writes in the loaded audit.', (tr, r) => {
    el('td', { class: 'time' }, tr, isoCell(time(r.first)));
    el('td', { class: 'time' }, tr, isoCell(time(r.last)));
    el('td', {}, tr, orDash(r.decision));
    el('td', {}, tr, `${orDash(r.presented_epoch)} → ${orDash(r.current_epoch)}`);
    for (const v of [r.count, r.holder, r.replica, r.route, r.status]) el('td', {}, tr, orDash(v));
    const td = el('td', {}, tr);
    (r.trace_ids || []).forEach((id, i) => {
      if (i) td.append(', ');
      const href = traceLink(id);
      if (href) el('a', { href, rel: 'noreferrer', target: '_blank', 'data-key': `trace:${r.id}:${id}` }, td, id);
      else el('code', {}, td, id);
    });
    if (!(r.trace_ids || []).length) td.textContent = '—';
  });
}

// traceLink fills the configured trace URL template, or gives null.
function traceLink(id) {
  if (!state.traceURL) return null;
  try {
    const u = new URL(state.traceURL.split('{trace_id}').join(encodeURIComponent(id)));
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch (e) {
    return null;
  }
}

// ---- Start ------------------------------------------------------------

// start reads the page's configuration, follows the hash and the window's
// size, and starts polling.
async function start() {
  setupKeyForm();
  setupResourceSearch();
  try {
    state.traceURL = (await getJSON('config.json')).trace_url || '';
  } catch (e) {
    state.traceURL = ''; // trace ids stay plain text
  }
  window.addEventListener('hashchange', () => { state.sig = ''; poll(); });
  let resizing = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => state.data && draw(state.data), 150);
  });
  poll();
}

start();
