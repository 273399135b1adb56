// html_script_check.js REPORT.html: runs the report's inline script against a minimal fake DOM
// (no browser needed) and checks what a user does with the timeline: it opens on the steady state;
// the wheel scrolls the page (no preventDefault, view unchanged) until the timeline has focus, then
// zooms; keys pan and zoom; a gap row's link moves the view to the gap and scrolls to it. Test
// cli_html_script (skipped without node); the real browser's rendering is cli_html_screenshot's.
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
const script = html.slice(html.indexOf('<script>') + 8, html.indexOf('</script>'));
function ctx() { return new Proxy({}, { get: (t, k) => k === 'measureText' ? () => ({ width: 100 }) : (k in t ? t[k] : () => {}), set: (t, k, v) => { t[k] = v; return true; } }); }
function el(props) {
  const e = Object.assign({ dataset: {}, listeners: {}, style: {}, children: [], hidden: false, clientWidth: 1000, offsetWidth: 200,
    addEventListener(n, f) { (this.listeners[n] = this.listeners[n] || []).push(f); },
    setAttribute(k, v) { this['@' + k] = v; }, getContext() { return this.c || (this.c = ctx()); },
    getBoundingClientRect() { return { left: 0, top: 0, width: 1000 }; }, appendChild() {}, contains(x) { return x === this || this.children.includes(x); },
    focus() { document.activeElement = this; }, blur() { document.activeElement = null; }, scrollIntoView() { this.scrolled = true; },
    closest() { return null; } }, props);
  return e;
}
const tls = [];
const re = /<div class="tl" id="([^"]*)"[^>]*data-axis="([^"]*)" data-span="([^"]*)" data-origin="(-?\d+)"(?: data-steady="([^"]*)")?[^>]*>/g;
let m;
while ((m = re.exec(html))) {
  const tl = el({ id: m[1] });
  tl.dataset = { axis: m[2], span: m[3], origin: m[4], labels: '' };
  if (m[5]) tl.dataset.steady = m[5];
  const canvas = el({}), main = el({}), tip = el({}), view = el({}), buttons = [];
  tl.children.push(canvas);
  const lanes = [];
  const laneRe = /<div class="k(.)" data-k="(.)" data-p="(\d+)"([^>]*)title="([^"]*)">/g;
  let l;
  const section = html.slice(m.index, html.indexOf('<ol class="tl-names"', m.index));
  while ((l = laneRe.exec(section))) {
    const d = el({ textContent: l[5] });
    d.dataset = { k: l[2], p: l[3] };
    for (const a of l[4].matchAll(/data-(.)="([^"]*)"/g)) d.dataset[a[1]] = a[2];
    lanes.push(d);
  }
  tl.querySelectorAll = (s) => s.startsWith('.tl-labels') ? lanes : s.startsWith('button') ? buttons : [];
  tl.querySelector = (s) => s === 'canvas.tl-plot' ? canvas : s === '.tl-main' ? main : s === '.tl-tip' ? tip : view;
  tls.push(tl);
}
global.document = { activeElement: null, body: el({}), listeners: {},
  querySelectorAll: (s) => s === '.tl' ? tls : [], createElement: () => el({}), getElementById: (id) => tls.find((t) => t.id === id),
  addEventListener(n, f) { (this.listeners[n] = this.listeners[n] || []).push(f); }, documentElement: {} };
global.window = { addEventListener() {}, devicePixelRatio: 1 };
global.location = { hash: '' };
global.getComputedStyle = () => ({ getPropertyValue: () => '' });
global.requestAnimationFrame = (f) => f();
global.performance = { now: () => 0 };
eval(script);
const assert = require('assert');
const tl = tls[0], canvas = tl.children[0];
const view = () => tl['@data-view'].split(':').map(Number);
const [s0, s1] = tl.dataset.steady.split(':').map(Number), span = Number(tl.dataset.span);
assert.ok(s1 - s0 < span, 'the trace has a steady state shorter than the run');
assert.ok(Math.abs(view()[0] - s0 / span) < 1e-5 && Math.abs(view()[1] - s1 / span) < 1e-5, 'opens on the steady state: ' + view());
let prevented = false;
const wheel = { deltaY: -100, clientX: 500, preventDefault() { prevented = true; } };
const before = view();
canvas.listeners.wheel[0](wheel);
assert.ok(!prevented && view()[0] === before[0] && view()[1] === before[1], 'the wheel scrolls the page without focus');
canvas.listeners.mousedown[0]({ clientX: 10 });
assert.strictEqual(document.activeElement, tl, 'a click gives the timeline focus');
canvas.listeners.wheel[0](wheel);
assert.ok(prevented && view()[1] - view()[0] < before[1] - before[0], 'with focus the wheel zooms in');
const key = (k) => { let p = false; tl.listeners.keydown[0]({ key: k, target: tl, preventDefault() { p = true; } }); return p; };
let v = view();
assert.ok(key('ArrowLeft') && view()[0] < v[0], 'ArrowLeft pans left');
v = view();
assert.ok(key('+') && view()[1] - view()[0] < v[1] - v[0], '+ zooms in');
v = view();
assert.ok(key('s') && view()[1] - view()[0] > v[1] - v[0], 'S zooms out');
assert.ok(key('0') && view()[0] === 0 && view()[1] === 1, '0 shows the whole run');
assert.ok(!key('q'), 'other keys are left alone');
// The axis labels count from the trace's stated origin, as the tables do: the view's text says
// where the whole run starts on that base.
const origin = Number(tl.dataset.origin);
const start = tl.querySelector('.tl-view').textContent.match(/^showing ([+\u2212])?([0-9.]+) ?(\S*)/);
assert.ok(start, 'the view says what it shows: ' + tl.querySelector('.tl-view').textContent);
assert.strictEqual(start[1] === '\u2212', origin > 0, 'the run starts before the origin exactly when the origin is inside the axis');
// A gap table's link (its text is the gap's start, "+1.234 ms", from the same origin).
const jump = [...html.matchAll(/<a class="jump" href="#([^"]*)" data-tl="[^"]*" data-t0="(\d+)" data-t1="(\d+)" title="show on the timeline">\+([0-9.]+) (ns|µs|ms|s)</g)]
  .find((j) => j[2] !== j[3]);
assert.ok(jump, 'the report has a gap link');
const unit = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9 }[jump[5]];
assert.ok(Math.abs(Number(jump[4]) * unit - (Number(jump[2]) - origin)) <= unit * 1e-3,
  'the table time and the axis place of a gap agree: ' + jump[4] + ' ' + jump[5] + ' at ' + jump[2] + ' - ' + origin);
const link = { dataset: { tl: jump[1], t0: jump[2], t1: jump[3] } };
tl.blur(); prevented = false;
document.listeners.click[0]({ target: { closest: () => link }, preventDefault() { prevented = true; } });
const t0 = Number(jump[2]) / span, t1 = Number(jump[3]) / span;
assert.ok(prevented && tl.scrolled && document.activeElement === tl, 'the link scrolls to the timeline and focuses it');
assert.ok(view()[0] <= t0 && view()[1] >= t1 && view()[1] - view()[0] <= 3.01 * (t1 - t0) + 1e-6, 'the view holds the gap: ' + view());
console.log('html script ok: opened on the steady state, wheel, keys and jump as documented');
