/* app.js: zbso's read-only dashboard (SPEC §5). Reads the inspection API (GET /jobs, the
 * job, its trials, a trial's curve) with the bearer token kept in this tab's
 * sessionStorage, and draws its charts as SVG itself: no library, nothing fetched from
 * another origin. It never writes, and never puts API text into markup (textContent only):
 * a job id is any string. */
'use strict';

(() => {
  const TOKEN_KEY = 'zbso.apiToken';
  const REFRESH_KEY = 'zbso.autoRefresh';
  const REFRESH_MS = 5000;
  const PAGE_SIZES = [25, 100, 500];
  const API_PAGE = 1000;          // the API's largest page
  const MAX_TRIAL_PAGES = 50;     // a job page reads at most 50,000 trials
  const TABLE_ROWS = 100;         // rows per page of the trial table
  // Okabe and Ito's colour-blind-safe palette; outcomes differ by shape as well.
  const TYPE_COLOR = {Exploration: '#0072B2', Concurrent: '#E69F00', MAB: '#CC79A7'};
  const TYPES = ['Exploration', 'Concurrent', 'MAB'];
  const ENERGY = [[1, 'J'], [1e3, 'kJ'], [1e6, 'MJ'], [1e9, 'GJ']];
  const TIME = [[0, 'ms', 1e-3], [1, 's'], [120, 'min', 60], [7200, 'h', 3600]];
  const SVGNS = 'http://www.w3.org/2000/svg';

  /* ---- DOM ---------------------------------------------------------------------- */

  function setProps(el, props) {
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') el.textContent = String(v);
      else if (k === 'data') {
        for (const [dk, dvv] of Object.entries(v)) if (dvv !== undefined) el.dataset[dk] = dvv;
      } else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  function append(el, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      el.append(k instanceof Node ? k : String(k));
    }
    return el;
  }
  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    setProps(el, props);
    return append(el, kids);
  }
  function s(tag, props, ...kids) {
    const el = document.createElementNS(SVGNS, tag);
    setProps(el, props);
    return append(el, kids);
  }
  const $ = (id) => document.getElementById(id);
  /* A value as data-v: the number's shortest round-trip text, or "null". */
  const dv = (x) => (x === null || x === undefined ? 'null' : String(x));

  /* A job id (any string) as text a person can compare: control characters and invisible
   * ones (bidi controls, zero-width characters: Unicode's default-ignorable code points,
   * as utf8_invisible in src/util/utf8.c has them for the CLI) become \uXXXX (\UXXXXXXXX
   * above U+FFFF), so ids that differ only by them look different and none reorders the
   * text around it. Links and data attributes keep the id itself. */
  const HIDDEN = new RegExp('[' + [
    '\\u{0}-\\u{1f}', '\\u{7f}-\\u{9f}', '\\u{ad}', '\\u{34f}', '\\u{61c}', '\\u{115f}-\\u{1160}',
    '\\u{17b4}-\\u{17b5}', '\\u{180b}-\\u{180f}', '\\u{200b}-\\u{200f}', '\\u{202a}-\\u{202e}',
    '\\u{2060}-\\u{206f}', '\\u{3164}', '\\u{fe00}-\\u{fe0f}', '\\u{feff}', '\\u{ffa0}',
    '\\u{fff0}-\\u{fff8}', '\\u{1bca0}-\\u{1bca3}', '\\u{1d173}-\\u{1d17a}', '\\u{e0000}-\\u{e0fff}',
  ].join('') + ']', 'gu');
  function showId(id) {
    return String(id).replace(HIDDEN, (c) => {
      const cp = c.codePointAt(0);
      return cp > 0xffff ? `\\U${cp.toString(16).padStart(8, '0')}`
        : `\\u${cp.toString(16).padStart(4, '0')}`;
    });
  }

  /* ---- numbers and units -------------------------------------------------------- */

  /* One formatter: toLocaleString builds one per call, which a page of 2,000 trials feels. */
  const GROUPED = new Intl.NumberFormat('en-US', {maximumFractionDigits: 20});
  /* x with n significant digits; whole numbers of n digits or more are grouped. */
  function num(x, n = 3) {
    if (x === null || x === undefined) return '\u2014';
    if (!Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a === 0) return '0';
    if (a >= 10 ** n) return GROUPED.format(Math.round(x));
    if (a < 1e-3) return x.toExponential(n - 1);
    return String(Number(x.toPrecision(n)));
  }
  /* The unit of a scale (ENERGY, TIME) for values up to maxAbs: {div, name}. */
  function unitFor(scale, maxAbs) {
    let u = scale[0];
    for (const c of scale) if (maxAbs >= c[0]) u = c;
    return {div: u.length > 2 ? u[2] : u[0], name: u[1]};
  }
  function qty(x, scale) {
    if (x === null || x === undefined) return '\u2014';
    const u = unitFor(scale, Math.abs(x));
    return `${num(x / u.div)} ${u.name}`;
  }
  const joules = (x) => qty(x, ENERGY);
  const seconds = (x) => qty(x, TIME);
  const kwh = (x) => (x === null || x === undefined ? '' : `${num(x / 3.6e6)} kWh`);
  const pad = (n) => String(n).padStart(2, '0');
  function when(unix) {
    if (unix === null || unix === undefined) return '\u2014';
    const d = new Date(unix * 1000);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  function ago(unix) {
    const d = Date.now() / 1000 - unix;
    if (d < 60) return d < 2 ? 'just now' : `${Math.floor(d)} s ago`;
    if (d < 3600) return `${Math.floor(d / 60)} min ago`;
    if (d < 172800) return `${Math.floor(d / 3600)} h ago`;
    return `${Math.floor(d / 86400)} d ago`;
  }

  /* ---- the API ------------------------------------------------------------------ */

  class ApiError extends Error {
    constructor(status, message, path) {
      super(message);
      this.status = status;  // 0: no answer
      this.path = path;
    }
  }
  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function messageOf(resp, body) {
    if (body && typeof body.message === 'string' && body.message) return body.message;
    if (body && Array.isArray(body.detail) && body.detail.length) {
      const d = body.detail[0];
      return `${(d.loc || []).join('.')}: ${d.msg}`;
    }
    return `${resp.status} ${resp.statusText}`.trim();
  }
  async function api(path) {
    const headers = {Accept: 'application/json'};
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    let resp;
    try {
      resp = await fetch(path, {headers, cache: 'no-store', credentials: 'omit'});
    } catch (e) {
      throw new ApiError(0, `no answer from the server (${e.message})`, path);
    }
    const text = await resp.text();
    let body = null;
    try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
    if (!resp.ok) throw new ApiError(resp.status, messageOf(resp, body), path);
    if (body === null || typeof body !== 'object') {
      throw new ApiError(resp.status, `the answer to ${path} is not a JSON object`, path);
    }
    return body;
  }
  const enc = encodeURIComponent;
  const jobPath = (id) => `/jobs/${enc(id)}`;
  const jobHref = (id) => `#/job/${enc(id)}`;
  const trialHref = (id, n) => `#/job/${enc(id)}/trial/${n}`;

  /* Every trial of a job, page after page (at most MAX_TRIAL_PAGES). */
  async function allTrials(id) {
    const out = [];
    let after = null;
    for (let page = 0; page < MAX_TRIAL_PAGES; page++) {
      const q = `limit=${API_PAGE}` + (after === null ? '' : `&after=${after}`);
      const doc = await api(`${jobPath(id)}/trials?${q}`);
      out.push(...doc.trials);
      after = doc.next;
      if (after === null) return {trials: out, truncated: false};
    }
    return {trials: out, truncated: true};
  }

  /* ---- charts ------------------------------------------------------------------- */

  function niceStep(span, count) {
    const raw = span / Math.max(1, count);
    const p = 10 ** Math.floor(Math.log10(raw));
    const f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  }
  /* A domain [lo, hi] widened to whole steps, and its ticks. */
  function axis(lo, hi, count, integer) {
    if (!(hi > lo)) hi = lo + (integer ? 1 : Math.abs(lo) || 1);
    let step = niceStep(hi - lo, count);
    if (integer) step = Math.max(1, Math.round(step));
    const a = Math.floor(lo / step + 1e-9) * step;
    const b = Math.ceil(hi / step - 1e-9) * step;
    const ticks = [];
    for (let i = 0; a + i * step <= b + step * 1e-6; i++) {
      ticks.push(+(a + i * step).toPrecision(12));
    }
    return {lo: a, hi: b, ticks};
  }
  const tickText = (v) => (Number.isInteger(v) ? GROUPED.format(v)
    : String(+v.toPrecision(6)));
  const tickCount = (width) => (width < 500 ? 4 : 8);

  /* An SVG plot area of width x height with axes; x() and y() map data to pixels. */
  class Plot {
    constructor(o) {
      this.m = {l: 66, r: 14, t: 14, b: 46 + (o.mb || 0)};
      this.w = o.width;
      this.h = o.height;
      this.x0 = o.x.lo;
      this.x1 = o.x.hi;
      this.y0 = o.y.lo;
      this.y1 = o.y.hi;
      this.pw = this.w - this.m.l - this.m.r;
      this.ph = this.h - this.m.t - this.m.b;
      this.svg = s('svg', {width: this.w, height: this.h, viewBox: `0 0 ${this.w} ${this.h}`,
        role: 'img', 'aria-label': o.title, class: 'chart', data: {chart: o.name}},
      s('title', {text: o.title}), o.desc ? s('desc', {text: o.desc}) : null);
      const {l, t} = this.m;
      const g = s('g', {class: 'axes'});
      for (const v of o.x.ticks || []) {
        const x = this.x(v);
        g.append(s('line', {x1: x, x2: x, y1: t, y2: t + this.ph, class: 'grid'}),
          s('text', {x, y: t + this.ph + 16, 'text-anchor': 'middle', text: tickText(v)}));
      }
      for (const v of o.y.ticks || []) {
        const y = this.y(v);
        g.append(s('line', {x1: l, x2: l + this.pw, y1: y, y2: y, class: 'grid'}),
          s('text', {x: l - 6, y: y + 4, 'text-anchor': 'end', text: tickText(v)}));
      }
      g.append(s('rect', {x: l, y: t, width: this.pw, height: this.ph, class: 'frame'}),
        s('text', {x: l + this.pw / 2, y: this.h - 8, 'text-anchor': 'middle',
          class: 'label', text: o.xlabel}),
        s('text', {x: 0, y: 0, 'text-anchor': 'middle', class: 'label', text: o.ylabel,
          transform: `translate(14 ${t + this.ph / 2}) rotate(-90)`}));
      this.svg.append(g);
    }
    x(v) {
      return +(this.m.l + (v - this.x0) / (this.x1 - this.x0) * this.pw).toFixed(2);
    }
    y(v) {
      return +(this.m.t + this.ph - (v - this.y0) / (this.y1 - this.y0) * this.ph).toFixed(2);
    }
    layer(cls) {
      const g = s('g', {class: cls});
      this.svg.append(g);
      return g;
    }
  }

  /* The width a chart in el may take. */
  const widthOf = (el) => Math.max(280, Math.min(1200, Math.floor(el.clientWidth || 600)));
  const chartHeight = (w) => (w < 500 ? 240 : 300);

  function note(text, cls) {
    return h('p', {class: `note ${cls || ''}`.trim(), text});
  }

  /* A marker for a trial's outcome: filled circle (converged), hollow circle (ended without
   * reaching the target), cross (failed); coloured by type unless fixed is given. */
  function marker(cx, cy, type, outcome, props, fixed, size) {
    const color = fixed || TYPE_COLOR[type] || '#555';
    const r = size || 4.5;
    if (outcome === 'failed') {
      return s('path', {...props, stroke: color, 'stroke-width': 2.2, fill: 'none',
        d: `M${cx - r} ${cy - r}L${cx + r} ${cy + r}M${cx - r} ${cy + r}L${cx + r} ${cy - r}`,
        class: 'mark failed'});
    }
    return s('circle', {...props, cx, cy, r, stroke: color, 'stroke-width': r > 4 ? 2 : 1.5,
      fill: outcome === 'converged' ? color : '#fff', class: `mark ${outcome}`});
  }
  const outcomeOf = (t) => (t.status === 'Failed' ? 'failed' : t.status === 'Dispatched'
    ? 'running' : t.converged ? 'converged' : 'stopped');
  const OUTCOME_TEXT = {converged: 'reached the target', stopped: 'stopped early (not converged)',
    failed: 'failed', running: 'running'};
  const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

  function legend(items) {
    return h('ul', {class: 'legend'},
      items.filter(Boolean).map(([sym, text]) => h('li', null, sym, ' ', text)));
  }
  function swatch(color, shape) {
    const svg = s('svg', {width: 16, height: 12, 'aria-hidden': 'true', class: 'swatch'});
    const line = {x1: 0, x2: 16, y1: 6, y2: 6, stroke: color};
    if (shape === 'line') svg.append(s('line', {...line, 'stroke-width': 2.5}));
    else if (shape === 'dash') {
      svg.append(s('line', {...line, 'stroke-width': 2, 'stroke-dasharray': '4 3'}));
    } else if (shape === 'bar') {
      svg.append(s('rect', {x: 0, y: 2, width: 16, height: 8, fill: color}));
    } else {
      svg.append(marker(8, 6, null, shape, {}, color));
    }
    return svg;
  }
  const typeLegend = () => TYPES.map((t) => [swatch(TYPE_COLOR[t], 'bar'), t]);
  const byNumber = (a, b) => a.trial_number - b.trial_number;
  const finished = (trials) => trials.filter((t) => t.status === 'Succeeded' && t.cost !== null);

  /* [trial number, cost] each time a trial that reached the target lowers the lowest cost:
   * a run stopped early did not do the job's work, so it is no best however cheap. */
  function runningBest(trials) {
    const steps = [];
    let best = null;
    for (const t of [...trials].sort(byNumber)) {
      if (t.status !== 'Succeeded' || !t.converged || t.cost === null) continue;
      if (best === null || t.cost < best) {
        best = t.cost;
        steps.push([t.trial_number, best]);
      }
    }
    return steps;
  }

  /* Cost of each finished trial by trial number, the running best and the default batch
   * size's expected cost; failed trials (no cost) as crosses on the axis. */
  function costChart(job, trials, width) {
    const fin = finished(trials);
    if (!fin.length) {
      return note('No finished trial yet: a trial\'s cost appears here when it ends ' +
        `(${plural(trials.length, 'trial')} so far).`, 'empty');
    }
    const sv = job.savings;
    const def = sv.default_expected ? sv.default_expected.cost : null;
    const top = Math.max(...fin.map((t) => t.cost), def === null ? 0 : def);
    const u = unitFor(ENERGY, top);
    const last = Math.max(...trials.map((t) => t.trial_number));
    const p = new Plot({width, height: chartHeight(width), name: 'cost',
      title: 'Cost per trial (recurrence)',
      desc: 'Each finished trial\'s cost by trial number, the running best and the default ' +
        'batch size\'s expected cost.',
      x: axis(0, last + 1, tickCount(width), true), y: axis(0, top / u.div * 1.05, 5),
      xlabel: 'trial number (one per recurrence)', ylabel: `cost (${u.name})`});
    if (def !== null) {
      const y = p.y(def / u.div);
      p.layer('default').append(s('line', {x1: p.x(p.x0), x2: p.x(p.x1), y1: y, y2: y,
        class: 'default-line', data: {v: dv(def)}}, s('title', {text:
        `default batch size ${sv.default_batch_size}: expected ${joules(def)} per recurrence`})));
    }
    const steps = runningBest(trials);
    if (steps.length) {
      let d = '';
      steps.forEach(([n, c], i) => {
        d += i === 0 ? `M${p.x(n)} ${p.y(c / u.div)}` : `H${p.x(n)}V${p.y(c / u.div)}`;
      });
      d += `H${p.x(last)}`;
      p.layer('best').append(s('path', {d, class: 'best-line',
        data: {best: JSON.stringify(steps)}}));
    }
    const pts = p.layer('points');
    const size = p.pw / Math.max(1, last) < 6 ? 3.2 : 4.5;
    for (const t of fin) {
      const o = outcomeOf(t);
      const m = marker(p.x(t.trial_number), p.y(t.cost / u.div), t.type, o,
        {data: {trial: t.trial_number, v: dv(t.cost), type: t.type, outcome: o}}, null, size);
      m.dataset.reason = dv(t.stop_reason);
      m.append(s('title', {text: `trial ${t.trial_number}: batch size ${t.batch_size}, ` +
        `${t.type}, ${OUTCOME_TEXT[o]}, cost ${joules(t.cost)}; stopped: ` +
        `${reasonText(t.stop_reason)}`}));
      pts.append(s('a', {href: trialHref(job.job_id, t.trial_number)}, m));
    }
    for (const t of trials.filter((x) => x.status === 'Failed')) {
      const m = marker(p.x(t.trial_number), p.y(p.y0) - 6, t.type, 'failed',
        {data: {trial: t.trial_number, v: 'null', type: t.type, outcome: 'failed'}}, null, size);
      m.dataset.reason = dv(t.stop_reason);
      m.append(s('title', {text: `trial ${t.trial_number}: batch size ${t.batch_size}, ` +
        `${t.type}, failed (no cost): ${reasonText(t.stop_reason)}`}));
      pts.append(m);
    }
    return h('figure', {class: 'fig'}, p.svg, legend([
      ...typeLegend(),
      [swatch('#333', 'converged'), 'reached the target'],
      [swatch('#333', 'stopped'), 'stopped early (cost bound or max epochs: see its tooltip)'],
      [swatch('#333', 'failed'), 'failed (ended or lease expired; no cost; on the axis)'],
      [swatch('#111', 'line'), 'running best'],
      def === null ? null : [swatch('#555', 'dash'),
        `default batch size ${sv.default_batch_size}: expected cost`],
    ]));
  }

  /* Cumulative cost of the finished trials, summed in trial-number order as the server
   * sums it, against as many runs at the default batch size; the break-even recurrence. */
  function cumulativeChart(job, trials, width) {
    const sv = job.savings;
    const fin = finished(trials).sort(byNumber);
    if (!sv.default_expected || !fin.length) return null;
    let sum = 0;
    const ours = fin.map((t, i) => [i + 1, (sum += t.cost)]);
    const n = fin.length;
    const each = sv.default_expected.cost;
    const top = Math.max(sum, n * each);
    const u = unitFor(ENERGY, top);
    const p = new Plot({width, height: chartHeight(width), name: 'cumulative',
      title: 'Cumulative cost against the default batch size',
      x: axis(0, n, tickCount(width), true), y: axis(0, top / u.div * 1.05, 5),
      xlabel: 'finished trials (recurrences)', ylabel: `cumulative cost (${u.name})`});
    const g = p.layer('cumulative');
    g.append(s('polyline', {class: 'ours', data: {v: dv(sum)},
      points: ours.map(([j, c]) => `${p.x(j)},${p.y(c / u.div)}`).join(' ')}));
    g.append(s('line', {x1: p.x(0), y1: p.y(0), x2: p.x(n), y2: p.y(n * each / u.div),
      class: 'default-line'}));
    const even = sv.break_even_recurrence;
    if (even !== null) {
      const x = p.x(even);
      g.append(s('line', {x1: x, x2: x, y1: p.y(p.y0), y2: p.y(p.y1), class: 'even-line',
        data: {v: dv(even)}}),
      s('text', {x: x + 4, y: p.y(p.y1) + 14, class: 'small', text: `even from ${even}`}));
    }
    return h('figure', {class: 'fig'}, p.svg, legend([
      [swatch('#0072B2', 'line'), 'this job (sum of finished trials\' costs)'],
      [swatch('#555', 'dash'),
        `every recurrence at the default batch size ${sv.default_batch_size}`],
      even === null ? null : [swatch('#009E73', 'line'), 'break-even recurrence'],
    ]));
  }

  /* The batch sizes pruned in a complete round. */
  function prunedSet(job) {
    const out = new Set();
    for (const r of job.exploration.rounds) {
      if (r.complete) r.pruned.forEach((b) => out.add(b));
    }
    return out;
  }
  /* What a batch size is to the job: an arm, pruned, or still being explored. */
  function bsState(job, arms, pruned, bs) {
    if (arms.has(bs)) return 'arm';
    return pruned.has(bs) || job.stage === 'MAB' ? 'pruned' : 'exploring';
  }

  /* Arms: expected cost (minus the posterior mean) +/- sd and observations per batch size;
   * batch sizes without an arm greyed. */
  function armsChart(job, width) {
    if (!job.arms.length) return null;
    const sizes = [...job.spec.batch_sizes].sort((a, b) => a - b);
    const arms = new Map(job.arms.map((a) => [a.batch_size, a]));
    const pruned = prunedSet(job);
    const costs = job.arms.filter((a) => Number.isFinite(a.sd))
      .flatMap((a) => [-a.mean - a.sd, -a.mean + a.sd]);
    const lo = Math.min(0, ...costs);
    const hi = Math.max(...costs, 1);
    const u = unitFor(ENERGY, Math.max(Math.abs(lo), hi));
    const narrow = (width - 80) / sizes.length < 48;
    const p = new Plot({width, height: chartHeight(width) + 20, name: 'arms', mb: narrow ? 26 : 16,
      title: 'Arms: expected cost per batch size (posterior mean \u00b1 sd)',
      x: {lo: -0.5, hi: sizes.length - 0.5, ticks: []}, y: axis(lo / u.div, hi / u.div * 1.05, 5),
      xlabel: narrow ? 'batch size' : 'batch size (n = observations)',
      ylabel: `expected cost (${u.name})`});
    const bestArm = job.arms.reduce((b, a) => (b === null || a.mean > b.mean ? a : b), null);
    const g = p.layer('arms');
    const base = p.y(p.y0);
    sizes.forEach((bs, i) => {
      const x = p.x(i);
      const a = arms.get(bs);
      const grey = bsState(job, arms, pruned, bs) === 'pruned';
      g.append(s('text', {x, y: base + 16, 'text-anchor': narrow ? 'end' : 'middle',
        text: String(bs), class: grey ? 'pruned-label' : 'bs-label', data: {bs},
        transform: narrow ? `rotate(-40 ${x} ${base + 16})` : undefined}));
      if (!narrow) {   // too tight on a phone: the table below has the observations
        g.append(s('text', {x, y: base + 30, 'text-anchor': 'middle',
          class: grey ? 'pruned-label small' : 'small',
          text: a ? `n=${a.observations}` : grey ? 'pruned' : ''}));
      }
      if (!a) return;
      const c = -a.mean;
      const best = a === bestArm;
      const arm = s('g', {class: best ? 'arm best' : 'arm', data: {bs, v: dv(c), sd: dv(a.sd)}});
      if (Number.isFinite(a.sd) && a.sd > 0) {
        const y1 = p.y((c - a.sd) / u.div);
        const y2 = p.y((c + a.sd) / u.div);
        arm.append(s('path', {class: 'err',
          d: `M${x} ${y1}V${y2}M${x - 6} ${y1}H${x + 6}M${x - 6} ${y2}H${x + 6}`}));
      }
      arm.append(s('circle', {cx: x, cy: p.y(c / u.div), r: best ? 6 : 5, class: 'arm-mean'}));
      arm.append(s('title', {text: `batch size ${bs}: expected cost ${joules(c)} \u00b1 ` +
        `${joules(a.sd)}, ${plural(a.observations, 'observation')}` +
        (best ? ' (highest posterior mean)' : '')}));
      g.append(arm);
    });
    return h('figure', {class: 'fig'}, p.svg, legend([
      [swatch('#0072B2', 'converged'), 'posterior mean of the cost, bar: \u00b1 1 sd'],
      [swatch('#D55E00', 'converged'), 'highest posterior mean'],
      [h('span', {class: 'pruned-label', text: 'grey'}), 'pruned batch size (no arm)'],
    ]));
  }

  /* Rows so that trials running at the same time sit apart: sorted by start, each trial
   * takes the first row free at its start, which uses as few rows as the most trials that
   * ran at once. A running trial lasts to its last lease renewal. */
  function lanes(trials) {
    const ends = [];
    const bars = [];
    const sorted = [...trials].sort((a, b) => a.start_time - b.start_time || byNumber(a, b));
    for (const t of sorted) {
      const end = t.end_time !== null ? t.end_time : Math.max(t.lease_renewed_at, t.start_time);
      let lane = ends.findIndex((e) => e <= t.start_time);
      if (lane < 0) {
        lane = ends.length;
        ends.push(end);
      } else {
        ends[lane] = end;
      }
      bars.push({t, lane, start: t.start_time, end});
    }
    return {bars, count: ends.length};
  }

  function timelineChart(job, trials, width) {
    if (!trials.length) {
      return note('No trial yet: trials appear here as clients ask for batch sizes.', 'empty');
    }
    const {bars, count} = lanes(trials);
    const t0 = Math.min(...bars.map((b) => b.start));
    const t1 = Math.max(...bars.map((b) => b.end));
    const u = unitFor(TIME, t1 - t0);
    const rows = Math.max(3, count);
    const laneH = count > 40 ? 5 : count > 12 ? 10 : 18;
    const p = new Plot({width, height: 60 + rows * laneH, name: 'timeline',
      title: 'Timeline: trials over wall-clock time',
      desc: 'Each bar is a trial from its start to its end; trials that ran at the same time ' +
        'are on different rows.',
      x: axis(0, (t1 - t0) / u.div, tickCount(width)), y: {lo: 0, hi: rows, ticks: []},
      xlabel: `time since the first trial started (${u.name})`, ylabel: 'trials at once'});
    const g = p.layer('bars');
    for (const b of bars) {
      const o = outcomeOf(b.t);
      const x = p.x((b.start - t0) / u.div);
      const w = Math.max(2, p.x((b.end - t0) / u.div) - x);
      const r = s('rect', {x, y: p.y(count - b.lane) + 1, width: +w.toFixed(2),
        height: Math.max(2, laneH - 2), fill: TYPE_COLOR[b.t.type] || '#555', class: `bar ${o}`,
        data: {trial: b.t.trial_number, lane: b.lane, start: dv(b.start), end: dv(b.end),
          outcome: o}});
      r.append(s('title', {text: `trial ${b.t.trial_number}: batch size ${b.t.batch_size}, ` +
        `${b.t.type}, ${OUTCOME_TEXT[o]}, ${when(b.start)} for ${seconds(b.end - b.start)}` +
        (o === 'running' ? ' (until its last lease renewal)'
          : `; stopped: ${reasonText(b.t.stop_reason)}`)}));
      g.append(s('a', {href: trialHref(job.job_id, b.t.trial_number)}, r));
    }
    p.svg.dataset.lanes = String(count);
    return h('figure', {class: 'fig'}, p.svg, legend([
      ...typeLegend(),
      [h('span', {class: 'key solid', text: '\u2588'}), 'reached the target'],
      [h('span', {class: 'key faint', text: '\u2588'}), 'stopped early'],
      [h('span', {class: 'key failed', text: '\u2591'}), 'failed'],
      [h('span', {class: 'key running', text: '\u2592'}), 'running (to its last lease renewal)'],
    ]));
  }

  /* One learning curve: value by epoch, with an optional target line. o: name, title,
   * ylabel, points [[epoch, value]], fmt (a value as text), scale (ENERGY, TIME or none),
   * target. */
  function curveChart(o, width) {
    const pts = o.points;
    const vals = pts.map((q) => q[1]).concat(o.target === undefined ? [] : [o.target]);
    let lo = Math.min(...vals);
    let hi = Math.max(...vals);
    let u = {div: 1, name: ''};
    if (o.scale) {
      u = unitFor(o.scale, Math.max(Math.abs(lo), Math.abs(hi)));
      lo = Math.min(0, lo);
    }
    if (hi === lo) {
      hi += Math.abs(hi) * 0.1 || 1;
      lo -= Math.abs(lo) * 0.1;
    }
    const margin = o.scale ? 0 : (hi - lo) * 0.05;
    const p = new Plot({width, height: chartHeight(width) - 40, name: o.name, title: o.title,
      x: axis(0, Math.max(1, ...pts.map((q) => q[0])), tickCount(width), true),
      y: axis((lo - margin) / u.div, (hi + (hi - lo) * 0.05) / u.div, 4),
      xlabel: 'epoch', ylabel: o.scale ? `${o.ylabel} (${u.name})` : o.ylabel});
    if (o.target !== undefined) {
      const y = p.y(o.target / u.div);
      p.layer('target').append(
        s('line', {x1: p.x(p.x0), x2: p.x(p.x1), y1: y, y2: y, class: 'target-line',
          data: {v: dv(o.target)}}, s('title', {text: `target metric ${o.target}`})),
        s('text', {x: p.x(p.x1) - 4, y: y - 5, 'text-anchor': 'end', class: 'small',
          text: `target ${o.target}`}));
    }
    const g = p.layer('curve');
    g.append(s('polyline', {class: 'curve',
      points: pts.map(([e, v]) => `${p.x(e)},${p.y(v / u.div)}`).join(' ')}));
    for (const [e, v] of pts) {
      g.append(s('circle', {cx: p.x(e), cy: p.y(v / u.div), r: 3.5, class: 'curve-pt',
        data: {epoch: e, v: dv(v)}}, s('title', {text: `epoch ${e}: ${o.fmt(v)}`})));
    }
    return h('figure', {class: 'fig'}, p.svg);
  }

  /* ---- page pieces -------------------------------------------------------------- */

  /* A table cell showing text, with the value v (when given) in data-v. */
  function cell(text, v, props) {
    const data = {v: v === undefined ? undefined : dv(v), ...(props && props.data)};
    return h('td', {...props, data}, text);
  }
  /* A definition list of [label, text, field, value, title]: data-field and data-v on each. */
  function facts(items) {
    return h('dl', {class: 'facts'}, items.filter(Boolean).map(([k, text, field, v, title]) =>
      h('div', {class: 'fact'}, h('dt', {text: k}),
        h('dd', {data: {field, v: v === undefined ? undefined : dv(v)}, title}, text))));
  }
  function section(id, title, ...kids) {
    return h('section', {class: 'panel', id, 'aria-labelledby': `${id}-h`},
      h('h2', {id: `${id}-h`, text: title}), kids);
  }
  function table(id, cls, heads, rows) {
    return h('div', {class: 'scroll'}, h('table', {class: cls, id},
      h('thead', null, h('tr', null, heads.map((t) => h('th', {scope: 'col', text: t})))),
      h('tbody', null, rows)));
  }
  function pager(page, pages, go, label) {
    if (pages <= 1) return null;
    return h('nav', {class: 'pager', 'aria-label': label},
      h('button', {type: 'button', disabled: page === 0, onclick: () => go(page - 1)},
        '\u2190 previous'),
      h('span', {text: ` page ${page + 1} of ${pages} `}),
      h('button', {type: 'button', disabled: page >= pages - 1, onclick: () => go(page + 1)},
        'next \u2192'));
  }
  function stageBadge(stage) {
    return h('span', {class: `badge stage-${String(stage).toLowerCase()}`, text: stage});
  }
  /* Energy in J (kJ, MJ, GJ) with kWh beside it. */
  function energy(x) {
    if (x === null || x === undefined) return '\u2014';
    return [joules(x), h('span', {class: 'sub', text: ` ${kwh(x)}`})];
  }

  /* ---- issue 25: why trials stopped, the projection, the footprint, trade-offs ------ */

  const REASONS = ['target_reached', 'cost_bound', 'max_epochs', 'ended', 'lease_expired',
    'unknown'];
  const REASON_TEXT = {target_reached: 'reached the target',
    cost_bound: 'over the cost bound (beta \u00d7 min cost)',
    max_epochs: 'max epochs without the target', ended: 'ended by its client (PATCH /trials)',
    lease_expired: 'lease expired (no report in time)',
    unknown: 'ended before stop reasons were stored'};
  const reasonText = (r) => (r === null || r === undefined ? 'running' : REASON_TEXT[r] || r);
  const pct = (x) => (x === null || x === undefined ? '\u2014' : `${num(x)}%`);
  const CURVES_MAX = 60;          // trials whose curves the overlay loads
  const TIPS_MAX = 500;           // points of the time-against-energy view with a tooltip
  // One colour per batch size (Okabe and Ito's palette, then darker shades).
  const BS_PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#D55E00', '#56B4E9',
    '#F0E442', '#000000', '#7f3c8d', '#11a579', '#3969ac', '#f2b701'];
  function bsColors(sizes) {
    const m = new Map();
    [...sizes].sort((a, b) => a - b).forEach((bs, i) => m.set(bs, BS_PALETTE[i % 12]));
    return m;
  }
  const bsLegend = (colors, used) => [...colors].filter(([bs]) => !used || used.has(bs))
    .map(([bs, c]) => [swatch(c, 'bar'), `batch size ${bs}`]);

  /* Grams, with kg and t for large figures. */
  function grams(x) {
    if (x === null || x === undefined) return '\u2014';
    const a = Math.abs(x);
    return a >= 1e6 ? `${num(x / 1e6)} t` : a >= 1e3 ? `${num(x / 1e3)} kg` : `${num(x)} g`;
  }
  function money(x, currency) {
    if (x === null || x === undefined) return '\u2014';
    return `${num(x, 4)}${currency ? ` ${currency}` : ''}`;
  }

  /* The projection: what the optimizer now expects of the next runs, as a sentence. */
  function projectionNote(job) {
    const p = job.projection;
    if (!p) {
      return h('p', {id: 'projection', class: 'projection none', data: {v: 'null'}},
        `No projection yet: ${job.projection_reason || 'not enough data'}.`);
    }
    const c = p.saving_per_run_pct.cost;
    const save = p.saving_per_run;
    const extra = [save.co2e_g !== undefined ? `${grams(save.co2e_g)} CO2e` : null,
      save.price !== undefined ? money(save.price, p.currency) : null].filter(Boolean);
    return h('p', {id: 'projection', class: 'projection',
      data: {bs: p.batch_size, v: dv(p.cost), sd: dv(p.cost_sd), saving: dv(save.cost),
        pct: dv(c), energy: dv(p.energy_j), time: dv(p.time_s)}},
    'Next runs: use batch size ', h('strong', {text: String(p.batch_size)}),
    `. Expected cost ${joules(p.cost)} \u00b1 ${joules(p.cost_sd)} per run, `,
    h('strong', {text: `${num(Math.abs(c))}% ${c >= 0 ? 'less' : 'more'}`}),
    ` than the default batch size ${job.savings.default_batch_size} ` +
    `(${joules(Math.abs(save.cost))} of cost per run; energy ${joules(p.energy_j)}, ` +
    `${kwh(p.energy_j)}, time ${seconds(p.time_s)} per run` +
    `${extra.length ? `; ${c >= 0 ? 'saves' : 'costs'} ${extra.join(', ')} per run` : ''}` +
    `; from ${plural(p.runs, 'run')}).`);
  }

  /* Savings in percent, the footprint when the server has one, trials by stop reason. */
  function valueFacts(job) {
    const sv = job.savings;
    const sp = sv.saved_pct;
    const items = [
      ['cost saved (%)', pct(sp && sp.cost), 'saved_pct.cost', sp && sp.cost,
        'of every recurrence at the default batch size'],
      ['energy saved (%)', pct(sp && sp.energy), 'saved_pct.energy', sp && sp.energy],
      ['time saved (%)', pct(sp && sp.time), 'saved_pct.time', sp && sp.time],
    ];
    const part = (o, k) => (o && o[k] !== undefined ? o[k] : undefined);
    if (part(sv.spent, 'co2e_g') !== undefined) {
      items.push(['CO2e spent', grams(sv.spent.co2e_g), 'spent.co2e_g', sv.spent.co2e_g],
        ['CO2e saved', grams(part(sv.saved, 'co2e_g')), 'saved.co2e_g',
          sv.saved ? sv.saved.co2e_g : null]);
    }
    const fp = job.footprint;
    if (fp && fp.carbon_intensity_source !== undefined) {
      const whose = fp.carbon_intensity_source === 'job' ? 'this job\'s own (its spec)'
        : 'the server\'s (--carbon-intensity)';
      items.push(fp.carbon_intensity_g_per_kwh !== undefined
        ? ['grid intensity', `${num(fp.carbon_intensity_g_per_kwh, 4)} g CO2e/kWh`,
          'footprint.carbon_intensity_g_per_kwh', fp.carbon_intensity_g_per_kwh, whose]
        : ['grid intensity', `a series of ${fp.carbon_intensity_series_points} points`,
          'footprint.carbon_intensity_series_points', fp.carbon_intensity_series_points,
          whose]);
    }
    if (part(sv.spent, 'price') !== undefined) {
      items.push(['energy cost spent', money(sv.spent.price, sv.currency), 'spent.price',
        sv.spent.price],
      ['energy cost saved', money(part(sv.saved, 'price'), sv.currency), 'saved.price',
        sv.saved ? sv.saved.price : null]);
    }
    const by = job.trials.by_stop_reason || {};
    return [facts(items), h('h3', {class: 'small', text: 'Why trials stopped'}),
      h('dl', {class: 'facts reasons'}, REASONS.map((r) => h('div', {class: 'fact'},
        h('dt', {text: REASON_TEXT[r]}),
        h('dd', {data: {field: `by_stop_reason.${r}`, v: dv(by[r] || 0)},
          text: String(by[r] || 0)}))))];
  }

  /* Time against energy per batch size: each converged trial a point, each batch size's
   * mean with error bars (population sd) in both, the Pareto front of the means and lines
   * of equal cost (eta E + (1 - eta) P T) through the means, so the trade-off eta makes
   * shows. */
  function paretoChart(job, trials, width) {
    const conv = finished(trials).filter((t) => t.converged);
    if (!conv.length) {
      return note('No converged trial yet: each one appears here as a point of its time ' +
        'and energy.', 'empty');
    }
    const eta = job.spec.eta_knob;
    const mp = job.spec.max_power;
    const colors = bsColors(job.spec.batch_sizes);
    const groups = new Map();
    for (const t of conv) {
      if (!groups.has(t.batch_size)) groups.set(t.batch_size, []);
      groups.get(t.batch_size).push(t);
    }
    const means = [...groups].sort((a, b) => a[0] - b[0]).map(([bs, ts]) => {
      const n = ts.length;
      const mt = ts.reduce((a, t) => a + t.time_s, 0) / n;
      const me = ts.reduce((a, t) => a + t.energy_j, 0) / n;
      const st = Math.sqrt(ts.reduce((a, t) => a + (t.time_s - mt) ** 2, 0) / n);
      const se = Math.sqrt(ts.reduce((a, t) => a + (t.energy_j - me) ** 2, 0) / n);
      return {bs, n, t: mt, e: me, st, se, cost: eta * me + (1 - eta) * mp * mt};
    });
    for (const m of means) {
      m.front = !means.some((o) => o !== m && o.t <= m.t && o.e <= m.e &&
        (o.t < m.t || o.e < m.e));
    }
    const tx = Math.max(...conv.map((t) => t.time_s), ...means.map((m) => m.t + m.st));
    const ey = Math.max(...conv.map((t) => t.energy_j), ...means.map((m) => m.e + m.se));
    const ut = unitFor(TIME, tx);
    const ue = unitFor(ENERGY, ey);
    const p = new Plot({width, height: chartHeight(width) + 40, name: 'pareto',
      title: 'Time against energy per batch size',
      desc: 'Each converged trial is a point; each batch size\'s mean has error bars of one ' +
        'standard deviation; the line joins the means no other mean beats in both time and ' +
        'energy; dotted lines have equal cost at this job\'s eta.',
      x: axis(0, tx / ut.div * 1.08, tickCount(width)), y: axis(0, ey / ue.div * 1.08, 5),
      xlabel: `time to the target (${ut.name})`, ylabel: `energy to the target (${ue.name})`});
    const X = (sec) => p.x(sec / ut.div);
    const Y = (j) => p.y(j / ue.div);
    // Iso-cost lines through the cheapest mean and the default's: E = (c - (1-eta) P T)/eta.
    const iso = p.layer('iso');
    const dflt = means.find((m) => m.bs === job.spec.default_batch_size);
    const cheapest = means.reduce((a, m) => (a === null || m.cost < a.cost ? m : a), null);
    const through = [...new Set([cheapest, dflt].filter(Boolean))];
    const tMax = p.x1 * ut.div;
    const eMax = p.y1 * ue.div;
    for (const m of through) {
      let pts;
      if (eta === 0) {
        const tc = m.cost / ((1 - eta) * mp);
        pts = [[tc, 0], [tc, eMax]];
      } else {
        const e0 = m.cost / eta;
        const slope = (1 - eta) * mp / eta;
        const t1 = slope > 0 ? Math.min(tMax, m.cost / ((1 - eta) * mp)) : tMax;
        pts = [[0, Math.min(e0, eMax * 4)], [t1, e0 - slope * t1]];
      }
      iso.append(s('line', {x1: X(pts[0][0]), y1: Y(pts[0][1]), x2: X(pts[1][0]),
        y2: Y(pts[1][1]), class: 'iso-line', 'clip-path': 'url(#pareto-clip)',
        data: {bs: m.bs, v: dv(m.cost)}},
      s('title', {text: `equal cost ${joules(m.cost)} (the mean of batch size ${m.bs})`})));
    }
    p.svg.prepend(s('defs', null, s('clipPath', {id: 'pareto-clip'}, s('rect', {x: p.m.l,
      y: p.m.t, width: p.pw, height: p.ph}))));
    const pts = p.layer('points');
    // Past TIPS_MAX points a tooltip each costs more than it tells (the means have theirs).
    const tips = conv.length <= TIPS_MAX;
    for (const t of conv) {
      pts.append(s('circle', {cx: X(t.time_s), cy: Y(t.energy_j), r: 3.2, class: 'pt',
        fill: colors.get(t.batch_size) || '#555', 'fill-opacity': 0.45,
        data: {trial: t.trial_number, bs: t.batch_size, t: dv(t.time_s), e: dv(t.energy_j)}},
      tips ? s('title', {text: `trial ${t.trial_number}: batch size ${t.batch_size}, ` +
        `${seconds(t.time_s)}, ${joules(t.energy_j)}, cost ${joules(t.cost)}, ` +
        `${reasonText(t.stop_reason)}`}) : null));
    }
    const front = means.filter((m) => m.front).sort((a, b) => a.t - b.t);
    p.layer('front').append(s('polyline', {class: 'front',
      data: {bs: JSON.stringify(front.map((m) => m.bs))},
      points: front.map((m) => `${X(m.t)},${Y(m.e)}`).join(' ')}));
    const g = p.layer('means');
    for (const m of means) {
      const col = colors.get(m.bs) || '#555';
      const x = X(m.t);
      const y = Y(m.e);
      const grp = s('g', {class: m.front ? 'mean front' : 'mean',
        data: {bs: m.bs, t: dv(m.t), e: dv(m.e), st: dv(m.st), se: dv(m.se), n: m.n,
          front: m.front ? 'yes' : 'no'}});
      if (m.st > 0 || m.se > 0) {
        grp.append(s('path', {class: 'err', stroke: col,
          d: `M${X(m.t - m.st)} ${y}H${X(m.t + m.st)}M${x} ${Y(m.e - m.se)}V${Y(m.e + m.se)}`}));
      }
      grp.append(s('rect', {x: x - 5, y: y - 5, width: 10, height: 10, fill: col,
        class: 'mean-mark'}), s('text', {x: x + 8, y: y - 7, class: 'small',
        text: String(m.bs)}));
      grp.append(s('title', {text: `batch size ${m.bs}: mean ${seconds(m.t)} \u00b1 ` +
        `${seconds(m.st)}, ${joules(m.e)} \u00b1 ${joules(m.se)} over ` +
        `${plural(m.n, 'converged trial')}; cost ${joules(m.cost)}` +
        (m.front ? ' (on the Pareto front)' : '')}));
      g.append(grp);
    }
    return h('figure', {class: 'fig'}, p.svg, legend([
      ...bsLegend(colors, new Set(groups.keys())),
      [swatch('#333', 'converged'), 'a converged trial'],
      [h('span', {class: 'key', text: '\u25a0'}), 'batch size mean \u00b1 1 sd'],
      [swatch('#111', 'line'), 'Pareto front of the means'],
      [swatch('#777', 'dash'), `equal cost at \u03b7 = ${eta}`],
    ]));
  }

  /* Every loaded trial's learning curve: the metric against the epoch (by = 'epoch') or
   * against cumulative energy (by = 'energy'), coloured by batch size, with the target. */
  function overlayChart(job, docs, by, width) {
    const withPts = docs.filter((d) => d.reports.length);
    if (!withPts.length) return note('No learning curve stored yet.', 'empty');
    const colors = bsColors(job.spec.batch_sizes);
    const target = job.spec.target_metric;
    const xs = withPts.flatMap((d) => d.reports.map((r) => (by === 'epoch' ? r.epoch
      : r.energy_j)));
    const ys = withPts.flatMap((d) => d.reports.map((r) => r.metric)).concat([target]);
    let lo = Math.min(...ys);
    let hi = Math.max(...ys);
    if (hi === lo) hi += Math.abs(hi) * 0.1 || 1;
    const ux = by === 'epoch' ? {div: 1, name: ''} : unitFor(ENERGY, Math.max(...xs));
    const p = new Plot({width, height: chartHeight(width), name: `overlay-${by}`,
      title: by === 'epoch' ? 'Learning curves: metric by epoch'
        : 'Learning curves: metric by cumulative energy',
      x: axis(0, Math.max(1, ...xs) / ux.div, tickCount(width), by === 'epoch'),
      y: axis(lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05, 4),
      xlabel: by === 'epoch' ? 'epoch' : `cumulative energy (${ux.name})`, ylabel: 'metric'});
    const ty = p.y(target);
    p.layer('target').append(s('line', {x1: p.x(p.x0), x2: p.x(p.x1), y1: ty, y2: ty,
      class: 'target-line', data: {v: dv(target)}},
    s('title', {text: `target metric ${target}`})));
    const g = p.layer('curves');
    for (const d of withPts) {
      const pts = d.reports.map((r) => [by === 'epoch' ? r.epoch : r.energy_j, r.metric]);
      g.append(s('polyline', {class: 'overlay', stroke: colors.get(d.batch_size) || '#555',
        points: pts.map(([x, y]) => `${p.x(x / ux.div)},${p.y(y)}`).join(' '),
        data: {trial: d.trial_number, bs: d.batch_size, pts: JSON.stringify(pts)}},
      s('title', {text: `trial ${d.trial_number}: batch size ${d.batch_size}, ` +
        `${reasonText(d.stop_reason)}`})));
    }
    const used = new Set(withPts.map((d) => d.batch_size));
    return h('figure', {class: 'fig'}, p.svg, legend([...bsLegend(colors, used),
      [swatch('#D55E00', 'dash'), `target ${target}`]]));
  }

  /* ---- downloads: the API's own documents, as JSON and CSV ---- */

  /* One CSV field: RFC 4180 quoting; a text that a spreadsheet would take for a formula
   * (=, +, -, @, tab, CR first) gets a leading apostrophe (OWASP's CSV injection advice).
   * Numbers are written as JSON writes them. */
  function csvField(v) {
    if (v === null || v === undefined) return '';
    let t = typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (typeof v === 'string' && /^[=+\-@\t\r]/.test(t)) t = `'${t}`;
    return /[",\r\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
  }
  function csvText(cols, rows) {
    const at = (o, path) => path.split('.').reduce((x, k) => (x == null ? x : x[k]), o);
    return [cols.join(','), ...rows.map((r) => cols.map((c) => csvField(at(r, c))).join(','))]
      .map((l) => `${l}\r\n`).join('');
  }
  const TRIAL_CSV = ['trial_number', 'batch_size', 'type', 'status', 'start_time', 'end_time',
    'lease_renewed_at', 'time_s', 'energy_j', 'metric', 'epochs', 'cost', 'converged',
    'stop_reason', 'energy_kwh'];
  /* The trial columns, with co2e_g and price when some trial has them. */
  const trialCols = (trials) => TRIAL_CSV.concat(['co2e_g', 'price'].filter((k) =>
    trials.some((t) => t[k] !== undefined)));
  function downloadText(name, text, type) {
    window.zbsoDownloads = window.zbsoDownloads || {};
    window.zbsoDownloads[name] = text;
    const url = URL.createObjectURL(new Blob([text], {type}));
    const a = h('a', {href: url, download: name, hidden: true});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
  function downloads(job, getTrials, getCurves) {
    const safe = job.job_id.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80) || 'job';
    const item = (id, label, make) => h('button', {type: 'button', id: `dl-${id}`,
      onclick: async (ev) => {
        const b = ev.currentTarget;
        b.disabled = true;
        try {
          const [text, type, ext] = await make();
          downloadText(`${safe}-${id.replace(/-(json|csv)$/, '')}.${ext}`, text, type);
        } catch (e) {
          banner(`Download failed: ${e.message}`);
        } finally {
          b.disabled = false;
        }
      }}, label);
    const json = (x) => [`${JSON.stringify(x, null, 1)}\n`, 'application/json', 'json'];
    const csv = (cols, rows) => [csvText(cols, rows), 'text/csv', 'csv'];
    const curveRows = (docs) => docs.flatMap((d) => d.reports.map((r) => ({
      job_id: job.job_id, trial_number: d.trial_number, batch_size: d.batch_size,
      stop_reason: d.stop_reason, ...r})));
    return section('downloads', 'Download',
      h('p', {class: 'small', text: 'The API\'s own documents: the job (GET /jobs/{id}), ' +
        'its trials and their per-epoch reports.'}),
      h('div', {class: 'buttons'},
        item('job-json', 'job (JSON)', async () => json(job)),
        item('trials-json', 'trials (JSON)', async () => json({job_id: job.job_id,
          trials: await getTrials()})),
        item('trials-csv', 'trials (CSV)', async () => {
          const ts = await getTrials();
          return csv(trialCols(ts), ts);
        }),
        item('curves-json', 'curves (JSON)', async () => json(await getCurves())),
        item('curves-csv', 'curves (CSV)', async () => csv(['job_id', 'trial_number',
          'batch_size', 'stop_reason', 'epoch', 'time_s', 'energy_j', 'metric',
          'received_at'], curveRows(await getCurves())))));
  }

  /* The trial documents (with reports) of trials, PARALLEL at a time; ended trials come
   * from cache, which they are added to (an ended trial no longer changes). */
  async function trialDocs(id, trials, cache) {
    const out = new Array(trials.length);
    let next = 0;
    const worker = async () => {
      while (next < trials.length) {
        const i = next++;
        const n = trials[i].trial_number;
        let d = cache.get(n);
        if (!d) {
          d = await api(`${jobPath(id)}/trials/${n}`);
          if (d.status !== 'Dispatched') cache.set(n, d);
        }
        out[i] = d;
      }
    };
    await Promise.all([1, 2, 3, 4, 5, 6].map(worker));
    return out;
  }

  /* Jobs side by side (#/compare/ID/ID...): what a recurrence costs at the default and at
   * the projected batch size, and what each job saved. */
  class CompareView {
    constructor(ids) {
      this.ids = ids;
      this.refreshable = true;
      crumbs([['Jobs', '#/'], ['compare']]);
    }
    async load() {
      const my = gen;
      if (this.ids.length < 2 || this.ids.length > 4) {
        throw new ApiError(404, `compare takes 2 to 4 jobs, not ${this.ids.length}`, null);
      }
      const jobs = await Promise.all(this.ids.map((id) => api(jobPath(id))));
      if (my !== gen) return;
      const same = this.jobs && JSON.stringify(jobs) === JSON.stringify(this.jobs);
      this.jobs = jobs;
      if (!same) this.render();
    }
    render() {
      const jobs = this.jobs;
      const saved = (j, k) => (j.savings.saved ? j.savings.saved[k] : null);
      const sp = (j, k) => (j.savings.saved_pct ? j.savings.saved_pct[k] : null);
      const proj = (j, k) => (j.projection ? j.projection[k] : null);
      const dflt = (j) => (j.savings.default_expected ? j.savings.default_expected.cost : null);
      const rows = jobs.map((j) => h('tr', {data: {job: j.job_id}},
        h('th', {scope: 'row'}, h('a', {href: jobHref(j.job_id), text: j.job_id})),
        cell(`${j.spec.gpu_model} \u00d7 ${j.spec.number_of_gpus}`, undefined,
          {data: {col: 'gpu'}}),
        cell(stageBadge(j.stage), undefined, {data: {col: 'stage', stage: j.stage}}),
        cell(String(j.savings.finished_trials), j.savings.finished_trials,
          {data: {col: 'finished'}}),
        cell(String(j.savings.default_batch_size), j.savings.default_batch_size,
          {data: {col: 'default_bs'}}),
        cell(String(j.best_batch_size), j.best_batch_size, {data: {col: 'best_bs'}}),
        cell(joules(dflt(j)), dflt(j), {data: {col: 'default_cost'}}),
        cell(proj(j, 'batch_size') === null ? '\u2014' : String(proj(j, 'batch_size')),
          proj(j, 'batch_size'), {data: {col: 'projected_bs'}}),
        cell(joules(proj(j, 'cost')), proj(j, 'cost'), {data: {col: 'projected_cost'}}),
        cell(pct(j.projection ? j.projection.saving_per_run_pct.cost : null),
          j.projection ? j.projection.saving_per_run_pct.cost : null,
          {data: {col: 'projected_pct'}}),
        cell(joules(saved(j, 'cost')), saved(j, 'cost'), {data: {col: 'saved_cost'},
          class: saved(j, 'cost') < 0 ? 'neg' : undefined}),
        cell(pct(sp(j, 'cost')), sp(j, 'cost'), {data: {col: 'saved_pct'}}),
        cell(energy(saved(j, 'energy_j')), saved(j, 'energy_j'), {data: {col: 'saved_energy'}}),
        cell(seconds(saved(j, 'time_s')), saved(j, 'time_s'), {data: {col: 'saved_time'}}),
        cell(j.savings.break_even_recurrence !== null ? String(j.savings.break_even_recurrence)
          : j.savings.saved ? 'not yet' : '\u2014', j.savings.break_even_recurrence,
        {data: {col: 'break_even'}})));
      main().replaceChildren(h('h1', {text: `Compare ${jobs.length} jobs`}),
        section('compare', 'Side by side', table('compare-table', 'compare', ['job', 'GPU',
          'stage', 'finished', 'default bs', 'best bs', 'cost per run at the default',
          'projected bs', 'projected cost per run', 'projected saving', 'cost saved',
          'cost saved (%)', 'energy saved', 'time saved', 'break-even'], rows)),
        section('compare-chart', 'Cost per recurrence', h('div', {class: 'chart-slot',
          data: {slot: 'compare'}})));
      this.charts();
    }
    charts() {
      const slot = main().querySelector('[data-slot="compare"]');
      if (slot) slot.replaceChildren(compareChart(this.jobs, widthOf(slot)));
    }
  }

  /* Per job: the expected cost of a recurrence at the default batch size and at the
   * projected one, as bars side by side. */
  function compareChart(jobs, width) {
    const val = (j) => [j.savings.default_expected ? j.savings.default_expected.cost : null,
      j.projection ? j.projection.cost : null];
    const top = Math.max(1, ...jobs.flatMap((j) => val(j).filter((v) => v !== null)));
    const u = unitFor(ENERGY, top);
    const p = new Plot({width, height: chartHeight(width), name: 'compare', mb: 10,
      title: 'Expected cost of one recurrence: default and projected batch size',
      x: {lo: -0.5, hi: jobs.length - 0.5, ticks: []}, y: axis(0, top / u.div * 1.08, 5),
      xlabel: 'job', ylabel: `cost per recurrence (${u.name})`});
    const g = p.layer('bars');
    const slotW = p.pw / jobs.length;
    const bw = Math.min(48, slotW / 3);
    jobs.forEach((j, i) => {
      const x = p.x(i);
      const label = j.job_id.length > 24 ? `${j.job_id.slice(0, 23)}\u2026` : j.job_id;
      g.append(s('text', {x, y: p.y(p.y0) + 16, 'text-anchor': 'middle', class: 'small',
        text: label}));
      val(j).forEach((v, k) => {
        if (v === null) return;
        const y = p.y(v / u.div);
        g.append(s('rect', {x: +(x - bw + k * bw).toFixed(2), y, width: +(bw - 2).toFixed(2),
          height: +(p.y(p.y0) - y).toFixed(2), fill: k ? '#009E73' : '#777',
          class: k ? 'bar projected' : 'bar default', data: {job: j.job_id, v: dv(v)}},
        s('title', {text: `${j.job_id}: ${k ? `projected (batch size ` +
          `${j.projection.batch_size})` : `default (batch size ` +
          `${j.savings.default_batch_size})`} ${joules(v)} per recurrence`})));
      });
    });
    return h('figure', {class: 'fig'}, p.svg, legend([
      [swatch('#777', 'bar'), 'at the default batch size (mean of its converged runs)'],
      [swatch('#009E73', 'bar'), 'at the projected batch size (the best arm)']]));
  }

  /* ---- views -------------------------------------------------------------------- */

  const main = () => $('main');
  let gen = 0;            // bumped by every navigation; an older view's work is dropped
  let view = null;        // the current view: {load(), render(), charts()?, showError()?}
  let timer = null;
  let ticking = false;

  function setState(state) {
    const m = main();
    m.dataset.state = state;
    m.dataset.gen = String(gen);
    m.setAttribute('aria-busy', state === 'loading' ? 'true' : 'false');
  }
  function banner(text) {
    const b = $('banner');
    b.textContent = text || '';
    b.hidden = !text;
  }
  function crumbs(items) {
    $('crumbs').replaceChildren(...items.map(([text, href], i) => h('span', null,
      i ? ' \u203a ' : '',
      href ? h('a', {href, text}) : h('span', {'aria-current': 'page', text}))));
  }
  function syncSignout() {
    $('signout').hidden = !token();
  }
  function forgetToken() {
    try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing stored */ }
  }

  function errorPanel(e, retry) {
    const title = e.status === 0 ? 'The zbso server does not answer'
      : e.status === 404 ? 'Not found'
        : e.status === 503 ? 'The server\'s database cannot answer now (503)'
          : `The server answered ${e.status}`;
    return h('div', {class: 'error-panel', role: 'alert'},
      h('h2', {text: title}),
      h('p', {class: 'error-msg', text: e.message}),
      e.path ? h('p', {class: 'small', text: `request: GET ${e.path}`}) : null,
      h('button', {type: 'button', onclick: retry}, 'Try again'));
  }

  function loginView(message) {
    setState('login');
    crumbs([['Sign in']]);
    const input = h('input', {id: 'token', type: 'password', autocomplete: 'off', required: true,
      spellcheck: 'false'});
    const submit = (ev) => {
      ev.preventDefault();
      try { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); } catch (e) { /* private */ }
      show();
    };
    main().replaceChildren(h('form', {class: 'login', onsubmit: submit},
      h('h1', {text: 'Sign in'}),
      h('p', {text: 'This server needs its API token (ZEUS_BSO_API_TOKEN) for every view. ' +
        'The token stays in this browser tab (session storage) and goes only to this server.'}),
      message ? h('p', {class: 'error-msg', role: 'alert', text: message}) : null,
      h('label', {for: 'token', text: 'API token'}), input,
      h('button', {type: 'submit'}, 'Sign in')));
    input.focus();
  }

  /* Runs a view's first load; on failure shows the login (401) or the error. */
  async function start(v, my) {
    try {
      await v.load();
      if (my === gen) setState('ready');
    } catch (e) {
      if (my !== gen) return;
      if (!(e instanceof ApiError)) throw e;
      fail(e);
    }
  }
  function fail(e) {
    if (e.status === 401) {
      const had = token();
      forgetToken();
      syncSignout();
      loginView(had ? `The server refused this token: ${e.message}` : '');
      return;
    }
    setState('error');
    if (view && view.showError) view.showError(e);
    else main().replaceChildren(errorPanel(e, () => show()));
  }

  /* Auto-refresh: the current view loads again (one load at a time); a failure keeps what
   * is shown and says so in the banner. */
  async function tick() {
    const my = gen;
    if (ticking || !view || !view.refreshable || document.hidden) return;
    if (main().dataset.state !== 'ready') return;
    ticking = true;
    try {
      await view.load();
      if (my === gen) banner('');
    } catch (e) {
      if (my !== gen || !(e instanceof ApiError)) return;
      if (e.status === 401) {
        fail(e);
        return;
      }
      banner(`Refresh failed at ${when(Date.now() / 1000)}: ${e.message} ` +
        '(showing what was loaded before)');
    } finally {
      ticking = false;
    }
  }
  function arm() {
    clearInterval(timer);
    timer = $('autorefresh').checked ? setInterval(tick, REFRESH_MS) : null;
  }

  /* Jobs: one page of GET /jobs, filtered by prefix (by the server) and stage (this page),
   * sorted by any column (this page). The filters live in the address. */
  class JobsView {
    constructor(params) {
      this.prefix = params.get('prefix') || '';
      this.after = params.get('after') || '';
      const lim = Number(params.get('limit'));
      this.limit = PAGE_SIZES.includes(lim) ? lim : 100;
      this.stage = ['Pruning', 'MAB'].includes(params.get('stage')) ? params.get('stage') : '';
      this.sort = {key: 'job_id', dir: 1};
      this.back = [];           // cursors of the pages before this one
      this.refreshable = true;
      this.build();
    }
    hash() {
      const q = new URLSearchParams();
      if (this.prefix) q.set('prefix', this.prefix);
      if (this.after) q.set('after', this.after);
      if (this.limit !== 100) q.set('limit', String(this.limit));
      if (this.stage) q.set('stage', this.stage);
      const t = q.toString();
      return t ? `#/?${t}` : '#/';
    }
    build() {
      crumbs([['Jobs']]);
      let debounce = null;
      const prefix = h('input', {id: 'f-prefix', type: 'search', value: this.prefix,
        placeholder: 'any', autocomplete: 'off', spellcheck: 'false', oninput: () => {
          clearTimeout(debounce);
          debounce = setTimeout(() => {
            this.prefix = prefix.value;
            this.first();
          }, 250);
        }});
      const stage = h('select', {id: 'f-stage', onchange: () => {
        this.stage = stage.value;
        this.render();
      }}, [['', 'any'], ['Pruning', 'Pruning'], ['MAB', 'MAB']].map(([v, t]) =>
        h('option', {value: v, selected: v === this.stage, text: t})));
      const limit = h('select', {id: 'f-limit', onchange: () => {
        this.limit = Number(limit.value);
        this.first();
      }}, PAGE_SIZES.map((n) => h('option', {value: n, selected: n === this.limit, text: n})));
      const saved = (j) => (j.savings.saved ? j.savings.saved.energy_j : null);
      const savedOf = (k) => (j) => (j.savings.saved ? j.savings.saved[k] : null);
      // The headline first (issue 25): the cost saved, the optimizer's objective.
      this.cols = [
        ['job_id', 'job id', (j) => j.job_id],
        ['prefix', 'prefix', (j) => j.job_id_prefix],
        ['stage', 'stage', (j) => j.stage],
        ['cost_saved', 'cost saved', savedOf('cost')],
        ['energy_saved', 'energy saved', saved],
        ['time_saved', 'time saved', savedOf('time_s')],
        ['trials', 'trials', (j) => j.trials.total],
        ['best_bs', 'best batch size', (j) => j.best_batch_size],
        ['updated_at', 'last activity', (j) => j.updated_at],
      ];
      this.picked = new Set();
      this.thead = h('tr', null, this.cols.map(([key, label]) =>
        h('th', {scope: 'col', data: {col: key}},
          h('button', {type: 'button', class: 'sort', onclick: () => this.sortBy(key)}, label))),
      h('th', {scope: 'col', data: {col: 'pick'}, title: 'pick 2 to 4 jobs to compare'},
        'compare'));
      this.compareBtn = h('button', {type: 'button', id: 'compare-picked', disabled: true,
        onclick: () => {
          location.hash = `#/compare/${[...this.picked].map(enc).join('/')}`;
        }}, 'compare picked jobs');
      this.tbody = h('tbody');
      this.status = h('p', {class: 'status', id: 'jobs-status', 'aria-live': 'polite'});
      this.empty = h('div', {class: 'empty-slot'});
      this.pagerEl = h('nav', {class: 'pager', 'aria-label': 'Job pages'});
      main().replaceChildren(
        h('h1', {text: 'Jobs'}),
        h('form', {class: 'filters', onsubmit: (e) => e.preventDefault()},
          h('label', null, 'job id prefix ', prefix),
          h('label', null, 'stage ', stage),
          h('label', null, 'per page ', limit), this.compareBtn),
        this.status,
        h('div', {class: 'scroll'}, h('table', {class: 'jobs', id: 'jobs-table'},
          h('caption', {class: 'sr-only', text: 'Jobs; the column buttons sort this page'}),
          h('thead', null, this.thead), this.tbody)),
        this.empty, this.pagerEl);
    }
    first() {
      this.after = '';
      this.back = [];
      this.reload();
    }
    /* A failed load: the message and a retry where the rows were; the filters stay. */
    showError(e) {
      this.doc = null;
      this.tbody.replaceChildren();
      this.status.textContent = '';
      this.pagerEl.replaceChildren();
      this.empty.replaceChildren(errorPanel(e, () => this.reload()));
    }
    async reload() {
      const my = gen;
      history.replaceState(null, '', this.hash());
      setState('loading');
      try {
        await this.load();
        if (my === gen) setState('ready');
      } catch (e) {
        if (my === gen && e instanceof ApiError) fail(e);
      }
    }
    async load() {
      const q = new URLSearchParams({limit: String(this.limit)});
      if (this.prefix) q.set('prefix', this.prefix);
      if (this.after) q.set('after', this.after);
      const my = gen;
      const doc = await api(`/jobs?${q}`);
      if (my !== gen) return;
      this.doc = doc;
      this.render();
      // When the first page was on screen, for the browser test's load time.
      window.zbsoTimings = window.zbsoTimings || {};
      if (window.zbsoTimings.jobsFirstRender === undefined) {
        window.zbsoTimings.jobsFirstRender = performance.now();
      }
    }
    sortBy(key) {
      this.sort = {key, dir: this.sort.key === key ? -this.sort.dir : 1};
      this.render();
    }
    /* The headline: the cost saved and its percentage; a job behind says so. */
    costCell(j) {
      const sv = j.savings;
      const c = sv.saved ? sv.saved.cost : null;
      const p = sv.saved_pct ? sv.saved_pct.cost : null;
      const behind = sv.saved !== null && sv.break_even_recurrence === null;
      return cell([joules(c), p === null ? '' : h('span', {class: 'sub', text: ` (${pct(p)})`}),
        behind ? h('span', {class: 'badge behind', text: 'not even yet'}) : ''], c, {
        data: {col: 'cost_saved', pct: dv(p), behind: behind ? 'yes' : 'no'},
        class: c !== null && c < 0 ? 'neg' : undefined,
        title: c === null ? 'no baseline yet: the default batch size has no converged run'
          : behind ? 'behind training every recurrence at the default batch size'
            : `even from recurrence ${sv.break_even_recurrence}`});
    }
    timeCell(j) {
      const t = j.savings.saved ? j.savings.saved.time_s : null;
      return cell([seconds(t), this.pctSub(j, 'time')], t, {data: {col: 'time_saved'},
        class: t !== null && t < 0 ? 'neg' : undefined});
    }
    /* " (12.5%)" of a saving, or nothing without one. */
    pctSub(j, k) {
      const p = j.savings.saved_pct ? j.savings.saved_pct[k] : null;
      return p === null ? '' : h('span', {class: 'sub', data: {pct: dv(p)}, text: ` (${pct(p)})`});
    }
    row(j) {
      const saved = j.savings.saved ? j.savings.saved.energy_j : null;
      const tr = j.trials;
      const extra = [tr.Failed ? ` ${tr.Failed} failed` : '',
        tr.Dispatched ? ` ${tr.Dispatched} running` : ''].join('');
      return h('tr', {data: {job: j.job_id}},
        h('th', {scope: 'row', data: {col: 'job_id'}},
          h('a', {href: jobHref(j.job_id), text: showId(j.job_id)})),
        cell(showId(j.job_id_prefix), undefined, {data: {col: 'prefix'}}),
        cell(stageBadge(j.stage), undefined, {data: {col: 'stage', stage: j.stage}}),
        this.costCell(j),
        cell([joules(saved), this.pctSub(j, 'energy')], saved, {data: {col: 'energy_saved'},
          class: saved !== null && saved < 0 ? 'neg' : undefined,
          title: saved === null ? 'no baseline yet: the default batch size has no converged run'
            : kwh(saved)}),
        this.timeCell(j),
        cell([String(tr.total), h('span', {class: 'sub', text: extra})], tr.total, {
          data: {col: 'trials'},
          title: `${tr.Succeeded} succeeded, ${tr.Failed} failed, ${tr.Dispatched} running`}),
        cell(String(j.best_batch_size), j.best_batch_size, {data: {col: 'best_bs'}}),
        cell(ago(j.updated_at), j.updated_at, {data: {col: 'updated_at'},
          title: when(j.updated_at)}),
        h('td', {data: {col: 'pick'}}, h('input', {type: 'checkbox', class: 'pick',
          'aria-label': `compare ${j.job_id}`, checked: this.picked.has(j.job_id),
          onchange: (ev) => {
            if (ev.target.checked) this.picked.add(j.job_id);
            else this.picked.delete(j.job_id);
            this.compareBtn.disabled = this.picked.size < 2 || this.picked.size > 4;
          }})));
    }
    render() {
      if (!this.doc) return;
      const col = this.cols.find((c) => c[0] === this.sort.key);
      const cmp = (a, b) => {
        const x = col[2](a);
        const y = col[2](b);
        if (x === y) return 0;
        if (x === null) return 1;           // nulls last either way
        if (y === null) return -1;
        return (x < y ? -1 : 1) * this.sort.dir;
      };
      for (const th of this.thead.children) {
        th.setAttribute('aria-sort', th.dataset.col !== this.sort.key ? 'none'
          : this.sort.dir > 0 ? 'ascending' : 'descending');
      }
      const rows = this.doc.jobs.filter((j) => !this.stage || j.stage === this.stage);
      if (this.sort.key !== 'job_id' || this.sort.dir !== 1) rows.sort(cmp);
      this.tbody.replaceChildren(...rows.map((j) => this.row(j)));
      const n = this.doc.jobs.length;
      const page = this.back.length ? `page ${this.back.length + 1}: ` : '';
      this.status.textContent = !n ? '' : `${page}${plural(n, 'job')}` +
        (rows.length !== n ? `, ${rows.length} in stage ${this.stage}` : '') +
        (this.doc.next !== null ? ' (more on the next page)' : '');
      let empty = null;
      if (!n && !this.prefix && !this.after) {
        empty = note('No jobs yet. A job appears here once a training client registers it ' +
          '(POST /jobs; Zeus\'s BatchSizeOptimizer or zbso run).', 'empty');
      } else if (!n) {
        empty = note(`No job id begins with \u201c${this.prefix}\u201d` +
          `${this.after ? ' after this point' : ''}.`, 'empty');
      } else if (!rows.length) {
        empty = note(`No job on this page is in the stage ${this.stage}.`, 'empty');
      }
      this.empty.replaceChildren(...(empty ? [empty] : []));
      const button = (id, label, disabled, go) =>
        h('button', {type: 'button', id, disabled, onclick: go}, label);
      this.pagerEl.replaceChildren(
        button('jobs-first', '\u21e4 first', !this.after, () => this.first()),
        button('jobs-prev', '\u2190 previous', !this.after, () => {
          this.after = this.back.pop() || '';
          this.reload();
        }),
        button('jobs-next', 'next \u2192', this.doc.next === null, () => {
          this.back.push(this.after);
          this.after = this.doc.next;
          this.reload();
        }));
    }
  }

  function chips(list, round, cls) {
    if (!list.length) return '\u2014';
    return list.map((b) => {
      let c = cls || '';
      if (round && round.pruned.includes(b)) c = 'pruned';
      else if (round && round.converged.includes(b)) c = 'converged';
      return h('span', {class: `chip ${c}`.trim(), data: {bs: b}, text: String(b)});
    });
  }

  /* A job: its summary, savings, cost per recurrence, arms, rounds, timeline, trials. */
  class JobView {
    constructor(id) {
      this.id = id;
      this.page = 0;
      this.refreshable = true;
      crumbs([['Jobs', '#/'], [id]]);
    }
    /* The job, and its trials again only when its revision moved. */
    async load() {
      const my = gen;
      const job = await api(jobPath(this.id));
      if (my !== gen) return;
      if (this.job && job.revision === this.job.revision) {
        this.job = job;
        const u = $('job-updated');
        if (u) u.textContent = ago(job.updated_at);
        return;
      }
      const {trials, truncated} = await allTrials(this.id);
      if (my !== gen) return;
      window.zbsoTimings = window.zbsoTimings || {};
      if (window.zbsoTimings.jobDataLoaded === undefined) {
        window.zbsoTimings.jobDataLoaded = performance.now();
      }
      this.job = job;
      this.trials = trials;
      this.truncated = truncated;
      this.render();
    }
    head() {
      const job = this.job;
      const tr = job.trials;
      const specOpen = Boolean(main().querySelector('details.spec[open]'));
      const lowest = job.min_cost === null ? '\u2014'
        : `${joules(job.min_cost)} at batch size ${job.min_cost_batch_size}`;
      return h('div', {class: 'job-head'},
        h('h1', null, h('span', {class: 'muted', text: 'job '}),
          h('span', {id: 'job-id', text: showId(job.job_id)}), ' ', stageBadge(job.stage)),
        facts([
          ['prefix', showId(job.job_id_prefix), 'job_id_prefix'],
          ['policy', job.spec.warm_start ? `${job.policy}, warm start` +
            (job.spec.prior_jobs.length ? ` from ${job.spec.prior_jobs.map(showId).join(', ')}` : '') :
            job.policy, 'policy', job.policy, 'the batch size policy that decides the ' +
            'trials: zeus (Zeus\'s pruning and Thompson sampling) or smart (zbso\'s own)'],
          ['trials', `${tr.total} (${tr.Succeeded} succeeded, ${tr.Failed} failed, ` +
            `${tr.Dispatched} running)`, 'trials.total', tr.total],
          ['best batch size', String(job.best_batch_size), 'best_batch_size', job.best_batch_size,
            job.stage === 'MAB' ? 'the arm with the highest posterior mean'
              : 'the batch size of the lowest cost so far'],
          ['lowest cost', lowest, 'min_cost', job.min_cost],
          ['registered', when(job.created_at), 'created_at', job.created_at],
          ['last activity', h('span', {id: 'job-updated', text: ago(job.updated_at)}),
            'updated_at', job.updated_at, when(job.updated_at)],
          ['revision', String(job.revision), 'revision', job.revision],
        ]),
        h('details', {class: 'spec', open: specOpen}, h('summary', {text: 'job spec'}),
          h('div', {class: 'scroll'}, h('table', {class: 'kv'}, h('tbody', null,
            Object.entries(job.spec).map(([k, v]) => h('tr', null, h('th', {scope: 'row', text: k}),
              h('td', {text: Array.isArray(v) ? v.join(', ') : String(v)}))))))));
    }
    savings() {
      const sv = this.job.savings;
      const spec = this.job.spec;
      const saved = (k) => (sv.saved ? sv.saved[k] : null);
      const dflt = (k) => (sv.default_expected ? sv.default_expected[k] : null);
      const even = sv.break_even_recurrence;
      return section('savings', 'Savings against the default batch size',
        sv.default_expected ? null : note('No baseline yet: the default batch size ' +
          `${sv.default_batch_size} has no converged finished trial, so nothing is compared ` +
          'with it.', 'empty'),
        facts([
          ['energy saved', energy(saved('energy_j')), 'saved.energy_j', saved('energy_j')],
          ['time saved', seconds(saved('time_s')), 'saved.time_s', saved('time_s')],
          ['cost saved', joules(saved('cost')), 'saved.cost', saved('cost')],
          ['break-even recurrence', even !== null ? String(even)
            : sv.default_expected ? 'not even yet' : '\u2014', 'break_even_recurrence', even],
          ['regret', joules(sv.regret), 'regret', sv.regret,
            'spent cost less the best batch size\'s expected cost per finished trial'],
          ['best in hindsight', sv.best_batch_size === null ? '\u2014'
            : `batch size ${sv.best_batch_size}: ${joules(sv.best_expected_cost)}`,
          'best_expected_cost', sv.best_expected_cost],
          ['spent: energy', energy(sv.spent.energy_j), 'spent.energy_j', sv.spent.energy_j],
          ['spent: time', seconds(sv.spent.time_s), 'spent.time_s', sv.spent.time_s],
          ['spent: cost', joules(sv.spent.cost), 'spent.cost', sv.spent.cost],
          ['default: expected energy', joules(dflt('energy_j')), 'default_expected.energy_j',
            dflt('energy_j')],
          ['default: expected time', seconds(dflt('time_s')), 'default_expected.time_s',
            dflt('time_s')],
          ['default: expected cost', joules(dflt('cost')), 'default_expected.cost',
            dflt('cost')],
          ['finished trials', String(sv.finished_trials), 'finished_trials', sv.finished_trials],
          ['failed trials', String(sv.failed_trials), 'failed_trials', sv.failed_trials],
          ['default runs', `${sv.default_runs} at batch size ${sv.default_batch_size}`,
            'default_runs', sv.default_runs],
        ]),
        valueFacts(this.job),
        h('p', {class: 'small', text: 'cost = \u03b7\u00b7energy + (1 \u2212 \u03b7)\u00b7max ' +
          `power\u00b7time with \u03b7 = ${spec.eta_knob}, max power ${spec.max_power} W: ` +
          'joules.'}),
        h('div', {class: 'chart-slot', data: {slot: 'cumulative'}}));
    }
    arms() {
      const job = this.job;
      const spec = job.spec;
      const pruned = prunedSet(job);
      const arms = new Map(job.arms.map((a) => [a.batch_size, a]));
      const sizes = [...spec.batch_sizes].sort((a, b) => a - b);
      const done = job.exploration.rounds.filter((r) => r.complete).length;
      const what = job.stage === 'MAB' ? 'Thompson sampling over the surviving batch sizes ' +
        '(Gaussian posteriors of the reward, minus the cost).'
        : `pruning: ${done} of ${spec.num_pruning_rounds} round(s) complete; arms are fitted ` +
          'when the job enters the MAB stage.';
      return section('arms', 'Arms (batch sizes)',
        h('p', {id: 'stage-note'}, 'stage: ', stageBadge(job.stage), ' ', what),
        h('div', {class: 'chart-slot', data: {slot: 'arms'}}),
        table('arms-table', 'arms', ['batch size', 'expected cost', 'sd', 'observations', 'state'],
          sizes.map((bs) => {
            const a = arms.get(bs);
            const state = bsState(job, arms, pruned, bs);
            const sd = !a ? '\u2014' : a.precision === null ? '0 (all equal)' : joules(a.sd);
            return h('tr', {class: state === 'pruned' ? 'pruned' : '', data: {bs, state}},
              h('th', {scope: 'row', text: String(bs)}),
              cell(a ? joules(-a.mean) : '\u2014', a ? -a.mean : null, {data: {col: 'cost'}}),
              cell(sd, a ? a.sd : null, {data: {col: 'sd'}}),
              cell(a ? String(a.observations) : '\u2014', a ? a.observations : null,
                {data: {col: 'observations'}}),
              cell(state, undefined, {data: {col: 'state'}}));
          })));
    }
    rounds() {
      const rounds = this.job.exploration.rounds;
      if (!rounds.length) return section('rounds', 'Pruning rounds',
        note('No pruning round has started.', 'empty'));
      const list = (r, k, chipList) => cell(chipList, JSON.stringify(r[k]), {data: {col: k}});
      return section('rounds', 'Pruning rounds', table('rounds-table', 'rounds',
        ['round', 'default', 'explored (in order)', 'converged', 'pruned', 'complete'],
        rounds.map((r) => h('tr', {data: {round: r.round}},
          h('th', {scope: 'row', text: String(r.round + 1)}),
          cell(String(r.default_batch_size), r.default_batch_size, {data: {col: 'default'}}),
          list(r, 'explored', chips(r.explored, r)), list(r, 'converged', chips(r.converged)),
          list(r, 'pruned', chips(r.pruned, null, 'pruned')),
          cell(r.complete ? 'yes' : 'in progress', r.complete, {data: {col: 'complete'}})))));
    }
    render() {
      const slot = (name) => h('div', {class: 'chart-slot', data: {slot: name}});
      main().replaceChildren(
        this.head(), projectionNote(this.job), this.savings(),
        section('cost', 'Cost per recurrence', slot('cost')),
        section('pareto', 'Time against energy per batch size', slot('pareto')),
        this.arms(), this.rounds(),
        section('overlay', 'Learning curves', h('p', {class: 'small', id: 'overlay-note'}),
          slot('overlay')),
        section('timeline', 'Timeline', slot('timeline')),
        section('trials', 'Trials', this.truncated
          ? note(`Showing the first ${this.trials.length} trials only.`, 'warn') : null,
        h('div', {class: 'trial-table'})),
        downloads(this.job, async () => this.trials, () => this.allCurves()));
      this.charts();
      this.trialTable();
      // When the job page was first on screen, for the browser test's load time.
      window.zbsoTimings = window.zbsoTimings || {};
      if (window.zbsoTimings.jobFirstRender === undefined) {
        window.zbsoTimings.jobFirstRender = performance.now();
      }
      this.loadCurves();
    }
    /* The learning curves of the last CURVES_MAX trials, after the page is on screen. */
    async loadCurves() {
      const my = gen;
      const rev = this.job.revision;
      this.curveCache = this.curveCache || new Map();
      const pick = [...this.trials].sort(byNumber).slice(-CURVES_MAX);
      let docs;
      try {
        docs = await trialDocs(this.id, pick, this.curveCache);
      } catch (e) {
        if (my === gen) banner(`Learning curves not loaded: ${e.message}`);
        return;
      }
      if (my !== gen || this.job.revision !== rev) return;
      this.curves = docs;
      this.drawOverlay();
    }
    async allCurves() {
      this.curveCache = this.curveCache || new Map();
      return trialDocs(this.id, this.trials, this.curveCache);
    }
    drawOverlay() {
      const slot = main().querySelector('[data-slot="overlay"]');
      if (!slot || !this.curves) return;
      const n = this.trials.length;
      $('overlay-note').textContent = n > this.curves.length
        ? `The last ${this.curves.length} of ${n} trials (the download has them all).`
        : `${plural(n, 'trial')}.`;
      const full = widthOf(slot);
      const w = full >= 900 ? Math.floor((full - 12) / 2) : full;
      slot.replaceChildren(overlayChart(this.job, this.curves, 'epoch', w),
        overlayChart(this.job, this.curves, 'energy', w));
      slot.dataset.trials = JSON.stringify(this.curves.map((d) => d.trial_number));
    }
    charts() {
      const job = this.job;
      const slot = (n) => main().querySelector(`[data-slot="${n}"]`);
      const w = widthOf(slot('cost'));
      slot('cumulative').replaceChildren(...[cumulativeChart(job, this.trials, w)].filter(Boolean));
      slot('cost').replaceChildren(costChart(job, this.trials, w));
      slot('arms').replaceChildren(...[armsChart(job, w)].filter(Boolean));
      slot('timeline').replaceChildren(timelineChart(job, this.trials, w));
      slot('pareto').replaceChildren(paretoChart(job, this.trials, w));
      this.drawOverlay();
    }
    trialRow(t) {
      const ended = t.end_time !== null;
      return h('tr', {data: {trial: t.trial_number}, class: `st-${t.status.toLowerCase()}`},
        h('th', {scope: 'row'}, h('a', {href: trialHref(this.job.job_id, t.trial_number),
          text: String(t.trial_number)})),
        cell(String(t.batch_size), t.batch_size, {data: {col: 'batch_size'}}),
        cell(h('span', {class: 'type', data: {type: t.type}}, swatch(TYPE_COLOR[t.type], 'bar'),
          ' ', t.type), undefined, {data: {col: 'type'}}),
        cell(t.status, undefined, {data: {col: 'status'}}),
        cell(t.status === 'Succeeded' ? (t.converged ? 'yes' : 'no') : '\u2014', t.converged,
          {data: {col: 'converged'}}),
        cell(t.stop_reason === null || t.stop_reason === undefined ? '\u2014' : t.stop_reason,
          undefined, {data: {col: 'stop_reason', reason: dv(t.stop_reason)},
            title: reasonText(t.stop_reason)}),
        cell(when(t.start_time), t.start_time, {data: {col: 'start_time'}}),
        cell(ended ? seconds(t.end_time - t.start_time) : 'running',
          ended ? t.end_time - t.start_time : null, {data: {col: 'duration'}}),
        cell(t.epochs === null ? '\u2014' : String(t.epochs), t.epochs, {data: {col: 'epochs'}}),
        cell(seconds(t.time_s), t.time_s, {data: {col: 'time_s'}}),
        cell(joules(t.energy_j), t.energy_j, {data: {col: 'energy_j'}}),
        cell(num(t.metric, 4), t.metric, {data: {col: 'metric'}}),
        cell(joules(t.cost), t.cost, {data: {col: 'cost'}}));
    }
    trialTable() {
      const box = main().querySelector('.trial-table');
      const trials = this.trials;
      if (!trials.length) {
        box.replaceChildren(note('No trial yet.', 'empty'));
        return;
      }
      const pages = Math.ceil(trials.length / TABLE_ROWS);
      this.page = Math.min(this.page, pages - 1);
      const rows = trials.slice(this.page * TABLE_ROWS, (this.page + 1) * TABLE_ROWS);
      const go = (p) => {
        this.page = p;
        this.trialTable();
      };
      box.replaceChildren(
        table('trials-table', 'trials', ['#', 'batch size', 'type', 'status', 'converged',
          'stop reason', 'started', 'duration', 'epochs', 'time', 'energy', 'metric', 'cost'],
        rows.map((t) => this.trialRow(t))),
        ...[pager(this.page, pages, go, 'Trial pages')].filter(Boolean));
    }
  }

  /* A trial: its figures and its per-epoch curves. */
  class TrialView {
    constructor(id, n) {
      this.id = id;
      this.n = n;
      this.refreshable = true;
      crumbs([['Jobs', '#/'], [id, jobHref(id)], [`trial ${n}`]]);
    }
    async load() {
      const my = gen;
      if (!/^[0-9]{1,15}$/.test(this.n)) {
        throw new ApiError(404, `"${this.n}" is not a trial number`, null);
      }
      const [job, trial] = await Promise.all([api(jobPath(this.id)),
        api(`${jobPath(this.id)}/trials/${this.n}`)]);
      if (my !== gen) return;
      const same = this.trial && JSON.stringify(trial) === JSON.stringify(this.trial);
      this.job = job;
      this.trial = trial;
      this.refreshable = trial.status === 'Dispatched';   // an ended trial no longer changes
      if (!same) this.render();
    }
    render() {
      const t = this.trial;
      const spec = this.job.spec;
      const o = outcomeOf(t);
      const better = spec.higher_is_better_metric ? 'higher' : 'lower';
      const head = h('div', {class: 'job-head'},
        h('h1', null, h('span', {class: 'muted', text: 'trial '}), String(t.trial_number), ' ',
          h('span', {class: `badge outcome-${o}`, text: OUTCOME_TEXT[o]})),
        h('p', null, 'of job ', h('a', {href: jobHref(t.job_id), text: showId(t.job_id)})),
        facts([
          ['batch size', String(t.batch_size), 'batch_size', t.batch_size],
          ['type', t.type, 'type'],
          ['status', t.status, 'status'],
          ['started', when(t.start_time), 'start_time', t.start_time],
          ['ended', t.end_time === null ? 'running' : when(t.end_time), 'end_time', t.end_time],
          ['epochs', t.epochs === null ? '\u2014' : String(t.epochs), 'epochs', t.epochs],
          ['time', seconds(t.time_s), 'time_s', t.time_s],
          ['energy', energy(t.energy_j), 'energy_j', t.energy_j],
          ['metric', num(t.metric, 4), 'metric', t.metric],
          ['cost', joules(t.cost), 'cost', t.cost],
          ['stop reason', reasonText(t.stop_reason), 'stop_reason', t.stop_reason],
          ['target metric', `${spec.target_metric} (${better} is better)`, 'target_metric',
            spec.target_metric],
        ]));
      const reports = t.reports;
      const none = t.status === 'Dispatched'
        ? 'No report received for this trial yet: its curve appears as it trains.'
        : 'This trial has no report stored.';
      const curves = section('curves', 'Per-epoch curves', reports.length
        ? h('div', {class: 'chart-slot curves', data: {slot: 'curves'}}) : note(none, 'empty'));
      const list = reports.length ? section('reports', 'Reports', table('reports-table',
        'reports', ['epoch', 'time', 'energy', 'metric', 'received'],
        reports.map((r) => h('tr', {data: {epoch: r.epoch}},
          h('th', {scope: 'row', text: String(r.epoch)}),
          cell(seconds(r.time_s), r.time_s, {data: {col: 'time_s'}}),
          cell(joules(r.energy_j), r.energy_j, {data: {col: 'energy_j'}}),
          cell(num(r.metric, 4), r.metric, {data: {col: 'metric'}}),
          cell(when(r.received_at), r.received_at, {data: {col: 'received_at'}}))))) : null;
      main().replaceChildren(head, curves, ...[list].filter(Boolean));
      if (reports.length) this.charts();
    }
    charts() {
      const slot = main().querySelector('[data-slot="curves"]');
      if (!slot) return;
      const full = widthOf(slot);
      const w = full >= 900 ? Math.floor((full - 24) / 3) : full;
      const r = this.trial.reports;
      const curve = (name, title, ylabel, key, fmt, scale, target) => curveChart({name, title,
        ylabel, fmt, scale, target, points: r.map((p) => [p.epoch, p[key]])}, w);
      slot.replaceChildren(
        curve('metric', 'Metric by epoch', 'metric', 'metric', (v) => num(v, 4), null,
          this.job.spec.target_metric),
        curve('time', 'Training time by epoch (cumulative)', 'time', 'time_s', seconds, TIME),
        curve('energy', 'Energy by epoch (cumulative)', 'energy', 'energy_j', joules, ENERGY));
    }
  }

  /* The view the address names: #/ (jobs), #/job/ID, #/job/ID/trial/N. */
  function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/';
    const q = raw.indexOf('?');
    const path = q < 0 ? raw : raw.slice(0, q);
    const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
    let parts;
    try {
      parts = path.split('/').filter((x) => x !== '').map(decodeURIComponent);
    } catch (e) {
      return {view: 'unknown', raw};
    }
    if (!parts.length) return {view: 'jobs', params};
    if (parts[0] === 'job' && parts.length === 2) return {view: 'job', id: parts[1]};
    if (parts[0] === 'job' && parts.length === 4 && parts[2] === 'trial') {
      return {view: 'trial', id: parts[1], n: parts[3]};
    }
    if (parts[0] === 'compare') return {view: 'compare', ids: parts.slice(1)};
    return {view: 'unknown', raw};
  }

  async function show() {
    const my = ++gen;
    banner('');
    syncSignout();
    setState('loading');
    const r = parseHash();
    main().dataset.view = r.view;
    if (r.view === 'unknown') {
      crumbs([['Jobs', '#/'], ['?']]);
      view = null;
      setState('error');
      const e = new ApiError(404, `the dashboard has no page "#${r.raw}"`, null);
      main().replaceChildren(errorPanel(e, () => { location.hash = '#/'; }));
      return;
    }
    if (r.view !== 'jobs') {
      main().replaceChildren(h('p', {class: 'loading', text: 'Loading\u2026'}));
    }
    view = r.view === 'jobs' ? new JobsView(r.params)
      : r.view === 'job' ? new JobView(r.id)
        : r.view === 'compare' ? new CompareView(r.ids) : new TrialView(r.id, r.n);
    await start(view, my);
  }

  let resizeTimer = null;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const drawn = view && view.charts && (view.trials || view.trial || view.jobs);
      if (drawn && main().dataset.state === 'ready') view.charts();
    }, 150);
  }

  function init() {
    const auto = $('autorefresh');
    try { auto.checked = sessionStorage.getItem(REFRESH_KEY) !== 'off'; } catch (e) { /* on */ }
    auto.addEventListener('change', () => {
      try { sessionStorage.setItem(REFRESH_KEY, auto.checked ? 'on' : 'off'); } catch (e) { /* */ }
      arm();
    });
    $('signout').addEventListener('click', () => {
      forgetToken();
      show();
    });
    window.addEventListener('hashchange', show);
    window.addEventListener('resize', onResize);
    arm();
    show();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
