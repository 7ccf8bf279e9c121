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

  /* x with n significant digits; whole numbers of n digits or more are grouped. */
  function num(x, n = 3) {
    if (x === null || x === undefined) return '\u2014';
    if (!Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    if (a === 0) return '0';
    if (a >= 10 ** n) return Math.round(x).toLocaleString('en-US');
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
  const tickText = (v) => (Number.isInteger(v) ? v.toLocaleString('en-US')
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
      m.append(s('title', {text: `trial ${t.trial_number}: batch size ${t.batch_size}, ` +
        `${t.type}, ${OUTCOME_TEXT[o]}, cost ${joules(t.cost)}`}));
      pts.append(s('a', {href: trialHref(job.job_id, t.trial_number)}, m));
    }
    for (const t of trials.filter((x) => x.status === 'Failed')) {
      const m = marker(p.x(t.trial_number), p.y(p.y0) - 6, t.type, 'failed',
        {data: {trial: t.trial_number, v: 'null', type: t.type, outcome: 'failed'}}, null, size);
      m.append(s('title', {text: `trial ${t.trial_number}: batch size ${t.batch_size}, ` +
        `${t.type}, failed (no cost)`}));
      pts.append(m);
    }
    return h('figure', {class: 'fig'}, p.svg, legend([
      ...typeLegend(),
      [swatch('#333', 'converged'), 'reached the target'],
      [swatch('#333', 'stopped'), 'stopped early'],
      [swatch('#333', 'failed'), 'failed (no cost; on the axis)'],
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
        (o === 'running' ? ' (until its last lease renewal)' : '')}));
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
      this.cols = [
        ['job_id', 'job id', (j) => j.job_id],
        ['prefix', 'prefix', (j) => j.job_id_prefix],
        ['stage', 'stage', (j) => j.stage],
        ['trials', 'trials', (j) => j.trials.total],
        ['best_bs', 'best batch size', (j) => j.best_batch_size],
        ['energy_saved', 'energy saved', saved],
        ['updated_at', 'last activity', (j) => j.updated_at],
      ];
      this.thead = h('tr', null, this.cols.map(([key, label]) =>
        h('th', {scope: 'col', data: {col: key}},
          h('button', {type: 'button', class: 'sort', onclick: () => this.sortBy(key)}, label))));
      this.tbody = h('tbody');
      this.status = h('p', {class: 'status', id: 'jobs-status', 'aria-live': 'polite'});
      this.empty = h('div', {class: 'empty-slot'});
      this.pagerEl = h('nav', {class: 'pager', 'aria-label': 'Job pages'});
      main().replaceChildren(
        h('h1', {text: 'Jobs'}),
        h('form', {class: 'filters', onsubmit: (e) => e.preventDefault()},
          h('label', null, 'job id prefix ', prefix),
          h('label', null, 'stage ', stage),
          h('label', null, 'per page ', limit)),
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
        cell([String(tr.total), h('span', {class: 'sub', text: extra})], tr.total, {
          data: {col: 'trials'},
          title: `${tr.Succeeded} succeeded, ${tr.Failed} failed, ${tr.Dispatched} running`}),
        cell(String(j.best_batch_size), j.best_batch_size, {data: {col: 'best_bs'}}),
        cell(joules(saved), saved, {data: {col: 'energy_saved'},
          class: saved !== null && saved < 0 ? 'neg' : undefined,
          title: saved === null ? 'no baseline yet: the default batch size has no converged run'
            : kwh(saved)}),
        cell(ago(j.updated_at), j.updated_at, {data: {col: 'updated_at'},
          title: when(j.updated_at)}));
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
        this.head(), this.savings(),
        section('cost', 'Cost per recurrence', slot('cost')),
        this.arms(), this.rounds(),
        section('timeline', 'Timeline', slot('timeline')),
        section('trials', 'Trials', this.truncated
          ? note(`Showing the first ${this.trials.length} trials only.`, 'warn') : null,
        h('div', {class: 'trial-table'})));
      this.charts();
      this.trialTable();
    }
    charts() {
      const job = this.job;
      const slot = (n) => main().querySelector(`[data-slot="${n}"]`);
      const w = widthOf(slot('cost'));
      slot('cumulative').replaceChildren(...[cumulativeChart(job, this.trials, w)].filter(Boolean));
      slot('cost').replaceChildren(costChart(job, this.trials, w));
      slot('arms').replaceChildren(...[armsChart(job, w)].filter(Boolean));
      slot('timeline').replaceChildren(timelineChart(job, this.trials, w));
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
          'started', 'duration', 'epochs', 'time', 'energy', 'metric', 'cost'],
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
      : r.view === 'job' ? new JobView(r.id) : new TrialView(r.id, r.n);
    await start(view, my);
  }

  let resizeTimer = null;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const drawn = view && view.charts && (view.trials || view.trial);
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
