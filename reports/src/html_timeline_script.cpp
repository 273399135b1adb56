// The page's script: decodes each timeline's packed lanes (html_timeline_data.h) once, then draws
// the visible window on a canvas whenever it changes. Drawing one lane: binary search for the
// first item that ends in the window, then every item that starts before its end; items at least
// two pixels wide are rectangles (with their name when it fits), narrower ones add their busy
// time to per-pixel columns drawn as bars whose height is the busy share of that pixel. A redraw
// is therefore linear in the items of the window and draws at most a few thousand shapes per lane.
// Names are read with textContent and written with fillText/textContent: never parsed as markup.
// The view opens on the steady state (data-steady); the wheel zooms only while the timeline has
// focus, so that it scrolls the page otherwise; keys pan and zoom; links in the tables (a.jump)
// move the view to a gap or a finding's evidence and mark it.
#include "html_assets.h"

namespace cuoverlap::html {

const char* const kScript = R"JS(
(function () {
  'use strict';
  var started = performance.now();
  var DIG = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_', VAL = new Int8Array(128);
  for (var q = 0; q < 64; q++) VAL[DIG.charCodeAt(q)] = q;
  var AH = 22, RH = 18;
  var STRIDE = { n: 3, a: 4, e: 2, s: 4, c: 3 };
  function unpack(s) {
    var out = new Float64Array(s.length), n = 0, v = 0, mul = 1;
    for (var i = 0; i < s.length; i++) {
      var d = VAL[s.charCodeAt(i)];
      if (d >= 32) { v += (d - 32) * mul; mul *= 32; } else { out[n++] = v + d * mul; v = 0; mul = 1; }
    }
    return out.subarray(0, n);
  }
  function zz(u) { return u % 2 ? -(u + 1) / 2 : u / 2; }
  var css = getComputedStyle(document.documentElement);
  function colour(name, fallback) { return css.getPropertyValue(name).trim() || fallback; }
  var NVTX = colour('--nvtx', '#7a8699'), API = colour('--api', '#5b8fa8'), COUNTER = colour('--counter', '#8e6bbf');
  function gapColour(cause) { return colour('--g-' + cause, '') || colour('--g-unknown', '#9e9e9e'); }
  var UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s'], [1, 'ns']];
  function unitOf(ns) { for (var i = 0; i < 3; i++) if (Math.abs(ns) >= UNITS[i][0]) return UNITS[i]; return UNITS[3]; }
  function fmt(ns) { var u = unitOf(ns), v = ns / u[0]; return (u[0] === 1 ? v.toFixed(0) : v.toPrecision(4).replace(/\.?0+$/, '')) + ' ' + u[1]; }
  function at(t) { return (t < 0 ? '\u2212' : '+') + fmt(Math.abs(t)); }
  function fmtBytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + ' ' + u[i];
  }
  function tickStep(range) {
    var raw = Math.max(1, range / 8), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function tickLabel(t, step, u) {
    if (t === 0) return '0';
    var dec = Math.max(0, Math.ceil(-Math.log10(step / u[0]) - 1e-9));
    return (t < 0 ? '\u2212' : '+') + (Math.abs(t) / u[0]).toFixed(dec) + ' ' + u[1];
  }
  // "void ns::k<float>(float*)" -> "void ns::k<…>(…)", as render::shortName does.
  function shortName(s) {
    var out = '', depth = 0;
    for (var i = 0; i < s.length && out.length < 400; i++) {
      var c = s[i], opens = c === '<' || c === '(', closes = c === '>' || c === ')';
      if (opens && depth++ === 0) out += c + '\u2026';
      if (depth === 0) out += c;
      if (closes && depth > 0 && --depth === 0) out += c;
    }
    return depth === 0 || out.length >= 400 ? out : s.slice(0, 400);
  }
  function clip(s, n) { return s.length > n ? s.slice(0, n) + '\u2026 (' + s.length + ' characters)' : s; }

  function decodeLane(div) {
    var k = div.dataset.k, lane = { k: k, pid: Number(div.dataset.p), label: div.textContent, n: 0 };
    if (k === 'e') lane.engine = Number(div.dataset.e);
    if (k === 'c') { lane.max = Number(div.dataset.m); lane.unit = div.dataset.u || ''; }
    if (div.dataset.g) {
      var g = unpack(div.dataset.g);
      lane.gaps = [];
      for (var j = 0; j + 3 < g.length; j += 4) lane.gaps.push({ s: zz(g[j]), e: zz(g[j]) + g[j + 1], cause: g[j + 2], title: g[j + 3] });
    }
    if (!div.dataset.d || !STRIDE[k]) return lane;
    var d = unpack(div.dataset.d), st = STRIDE[k], n = Math.floor(d.length / st);
    var s = new Float64Array(n), e = new Float64Array(n), emax = new Float64Array(n), name = new Int32Array(n);
    var corr = st === 4 ? new Float64Array(n) : null, t = 0, c = 0, m = -Infinity;
    for (var i = 0, o = 0; i < n; i++, o += st) {
      t += zz(d[o]); s[i] = t; e[i] = t + d[o + 1]; m = Math.max(m, e[i]); emax[i] = m;
      if (st > 2) name[i] = d[o + 2];
      if (corr) { c += zz(d[o + 3]); corr[i] = c; }
    }
    lane.n = n; lane.s = s; lane.e = e; lane.emax = emax; lane.name = name; lane.corr = corr;
    return lane;
  }
  // First item whose running maximum end passes t: nothing before it reaches t.
  function firstEnding(lane, t) {
    var lo = 0, hi = lane.n;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (lane.emax[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function lastStarting(lane, t) {
    var lo = 0, hi = lane.n;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (lane.s[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo - 1;
  }

  var groups = {};
  document.querySelectorAll('.tl').forEach(function (tl) {
    var key = tl.dataset.axis;
    (groups[key] = groups[key] || { span: Number(tl.dataset.span), v0: 0, v1: Number(tl.dataset.span), views: [] }).views.push(tl);
  });
  var hash = /zoom=([0-9.]+):([0-9.]+)/.exec(location.hash);
  Object.keys(groups).forEach(function (key) {
    var g = groups[key];
    // The steady state (the union of the group's) is where the timeline opens, unless #zoom= says.
    g.views.forEach(function (tl) {
      var m = /^([0-9]+):([0-9]+)$/.exec(tl.dataset.steady || '');
      if (!m || Number(m[2]) <= Number(m[1])) return;
      g.steady = g.steady ? [Math.min(g.steady[0], Number(m[1])), Math.max(g.steady[1], Number(m[2]))] : [Number(m[1]), Number(m[2])];
    });
    if (g.steady) { g.v0 = g.steady[0]; g.v1 = g.steady[1]; }
    if (hash && Number(hash[2]) > Number(hash[1])) { g.v0 = Math.max(0, Number(hash[1])) * g.span; g.v1 = Math.min(1, Number(hash[2])) * g.span; }
    g.set = function (v0, v1) {
      var w = Math.min(g.span, Math.max(100, v1 - v0));
      v0 = Math.min(g.span - w, Math.max(0, v0));
      g.v0 = v0; g.v1 = v0 + w;
      g.views.forEach(function (v) { v.timeline.request(); });
    };
    // A table row's place: a gap with as much again on each side, a moment in 2% of the run.
    g.show = function (t0, t1) {
      var pad = t1 > t0 ? t1 - t0 : Math.max(2e4, g.span / 50) / 2;
      g.mark = [t0, t1];
      g.set(t0 - pad, t1 + pad);
    };
    g.views.forEach(function (tl) { tl.timeline = new Timeline(tl, g); });
  });
  // Links in the gap and finding tables (a.jump): move that trace's timeline there, mark the
  // place and bring the timeline into view.
  document.addEventListener('click', function (e) {
    var a = e.target.closest ? e.target.closest('a.jump') : null;
    if (!a) return;
    var tl = document.getElementById(a.dataset.tl);
    if (!tl || !tl.timeline) return;
    e.preventDefault();
    groups[tl.dataset.axis].show(Number(a.dataset.t0), Number(a.dataset.t1));
    tl.scrollIntoView({ block: 'center' });
    tl.focus({ preventScroll: true });
  });
  // How long decoding and the first drawing took, and the time since navigation (for tests).
  document.body.setAttribute('data-timeline-ms', Math.round(performance.now() - started) + ' ' + Math.round(performance.now()));

  function Timeline(tl, g) {
    var self = this, names = [], labels = unpack(tl.dataset.labels || '');
    // The trace's stated origin (its first GPU op) on the axis: labels and tooltips count from it,
    // as the tables do.
    var O = Number(tl.dataset.origin || 0);
    function atO(t) { return at(t - O); }
    // Engines by their number in the page (Engine's values), coloured by the style sheet.
    var ENGINES = (tl.dataset.engines || 'compute').split(' '), NE = ENGINES.length;
    var EC = ENGINES.map(function (e) { return colour('--e-' + e, '#3b73b9'); });
    tl.querySelectorAll('.tl-names > li').forEach(function (li) { names.push(li.textContent); });
    var shortCache = {};
    function display(i) { return shortCache[i] !== undefined ? shortCache[i] : (shortCache[i] = shortName(names[i] || '')); }
    var lanes = Array.prototype.map.call(tl.querySelectorAll('.tl-labels > div[data-k]'), decodeLane);
    var canvas = tl.querySelector('canvas.tl-plot'), main = tl.querySelector('.tl-main'), tip = tl.querySelector('.tl-tip');
    var over = document.createElement('canvas'); over.className = 'tl-over'; main.appendChild(over);
    var view = tl.querySelector('.tl-view'), W = 0, H = AH + lanes.length * RH, pending = false, cw = 6;
    var calls = null, ops = null;
    // The device group a row belongs to: the gap shading covers it.
    var groupEnd = [];
    for (var r = lanes.length - 1, end = lanes.length; r >= 0; r--) { if (lanes[r].k === 'h') { groupEnd[r] = end; end = r; } }
    function x(t) { return (t - g.v0) / (g.v1 - g.v0) * W; }
    function size(c, ctx) {
      var dpr = window.devicePixelRatio || 1;
      c.width = Math.round(W * dpr); c.height = Math.round(H * dpr); c.style.width = W + 'px'; c.style.height = H + 'px';
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    this.request = function () { if (!pending) { pending = true; requestAnimationFrame(draw); } };
    function draw() {
      pending = false; drawnCount = 0;
      W = Math.max(100, main.clientWidth);
      var ctx = canvas.getContext('2d');
      size(canvas, ctx); size(over, over.getContext('2d'));
      ctx.font = '11px system-ui,sans-serif'; cw = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26;
      for (var r = 0; r < lanes.length; r++) {
        if (lanes[r].k === 'h') { ctx.fillStyle = '#eef0f4'; ctx.fillRect(0, AH + r * RH, W, RH); }
        else if (r % 2) { ctx.fillStyle = '#f6f7f9'; ctx.fillRect(0, AH + r * RH, W, RH); }
      }
      for (r = 0; r < lanes.length; r++) if (lanes[r].gaps) drawGaps(ctx, r);
      axis(ctx);
      for (r = 0; r < lanes.length; r++) if (lanes[r].n) drawLane(ctx, lanes[r], AH + r * RH + 2, RH - 4);
      if (g.mark) drawMark(ctx);
      var vu = unitOf(Math.max(Math.abs(g.v0 - O), Math.abs(g.v1 - O))), vs = Math.max(1, (g.v1 - g.v0) / 1000);
      view.textContent = 'showing ' + tickLabel(g.v0 - O, vs, vu).replace(/^0$/, '+0') + ' to ' + tickLabel(g.v1 - O, vs, vu) + ' (' + fmt(g.v1 - g.v0) + ')';
      tl.setAttribute('data-view', (g.v0 / g.span).toFixed(6) + ':' + (g.v1 / g.span).toFixed(6));
      tl.setAttribute('data-drawn', String(drawnCount));
    }
    function drawGaps(ctx, r) {
      var top = AH + r * RH, bottom = AH + groupEnd[r] * RH;
      lanes[r].gaps.forEach(function (gap) {
        if (gap.e < g.v0 || gap.s > g.v1) return;
        var x0 = Math.max(-1, x(gap.s)), x1 = Math.min(W + 1, x(gap.e)), w = Math.max(1, x1 - x0);
        ctx.fillStyle = gapColour(names[gap.cause]);
        ctx.globalAlpha = 0.22; ctx.fillRect(x0, top, w, bottom - top);
        ctx.globalAlpha = 1; ctx.fillRect(x0, top, w, 4);
      });
    }
    // The place a table link showed: its edges (one line for a moment) across every row.
    function drawMark(ctx) {
      ctx.strokeStyle = '#d81b60'; ctx.lineWidth = 1.5; ctx.setLineDash([4, 3]);
      [g.mark[0], g.mark[1]].forEach(function (t, j) {
        if (j && t === g.mark[0]) return;
        var px = Math.round(x(t)) + 0.5;
        if (px < 0 || px > W) return;
        ctx.beginPath(); ctx.moveTo(px, AH); ctx.lineTo(px, H); ctx.stroke();
      });
      ctx.setLineDash([]);
    }
    function axis(ctx) {
      var step = tickStep(g.v1 - g.v0), u = unitOf(Math.max(Math.abs(g.v1 - O), Math.abs(g.v0 - O), step));
      ctx.fillStyle = '#5d6675'; ctx.strokeStyle = '#e3e6eb'; ctx.textBaseline = 'middle';
      for (var i = Math.ceil((g.v0 - O) / step), used = -Infinity; O + i * step <= g.v1; i++) {
        var px = Math.round(x(O + i * step)) + 0.5, text = tickLabel(i * step, step, u), tw = ctx.measureText(text).width;
        ctx.beginPath(); ctx.moveTo(px, AH - 6); ctx.lineTo(px, H); ctx.stroke();
        var left = px + tw + 4 > W ? px - 3 - tw : px + 3;  // the last label stays inside the plot
        if (left < used + 8) continue;  // and never covers the one before
        ctx.textAlign = 'left'; ctx.fillText(text, left, AH / 2); used = left + tw;
      }
      ctx.fillStyle = '#1d2330'; ctx.fillRect(0, AH - 1, W, 1);
    }
    function itemColour(lane, i) {
      if (lane.k === 'n') return NVTX;
      if (lane.k === 'a') return API;
      if (lane.k === 'e') return EC[lane.engine] || EC[0];
      return EC[labels[lane.name[i] * 6 + 1]] || EC[0];
    }
    function itemText(lane, i) {
      if (lane.k === 'e' || lane.k === 'c') return '';
      return display(lane.k === 's' ? labels[lane.name[i] * 6] : lane.name[i]);
    }
    var drawnCount = 0;
    // A counter lane (GPU metrics): per pixel column the largest sample's bar, its height the value
    // against the lane's largest in the window.
    function drawCounter(ctx, lane, y, h) {
      var top = new Float32Array(W), first = firstEnding(lane, g.v0);
      for (var i = first; i < lane.n && lane.s[i] < g.v1; i++) {
        var x0 = x(lane.s[i]), x1 = x(lane.e[i]);
        if (x1 < 0) continue;
        var c0 = Math.max(0, Math.floor(x0)), c1 = Math.min(W - 1, Math.max(c0, Math.ceil(x1) - 1));
        for (var c = c0; c <= c1; c++) top[c] = Math.max(top[c], lane.name[i] / 1000);
      }
      ctx.fillStyle = COUNTER;
      for (var c = 0; c < W; c++) if (top[c] > 0) { var bh = Math.max(1, top[c] * h); ctx.fillRect(c, y + h - bh, 1, bh); }
    }
    function drawLane(ctx, lane, y, h) {
      if (lane.k === 'c') { drawCounter(ctx, lane, y, h); return; }
      var cov = new Float32Array(W * NE), first = firstEnding(lane, g.v0), rects = 0;
      for (var i = first; i < lane.n && lane.s[i] < g.v1; i++) {
        var x0 = x(lane.s[i]), x1 = x(lane.e[i]);
        if (x1 < 0) continue;  // ends before the window (an earlier item reaches into it)
        var col = lane.k === 's' ? labels[lane.name[i] * 6 + 1] : lane.k === 'e' ? lane.engine : 0;
        if (x1 - x0 >= 2 && rects < 4000) {
          rects++;
          var a = Math.max(x0, -2), b = Math.min(x1, W + 2);
          ctx.fillStyle = itemColour(lane, i); ctx.fillRect(a, y, Math.max(1, b - a - 0.5), h);
          var room = b - a - 6;
          if (room > cw * 3) {
            var text = itemText(lane, i), fit = Math.floor(room / cw);
            if (text) {
              ctx.fillStyle = '#fff'; ctx.textAlign = 'left';
              ctx.fillText(text.length > fit ? text.slice(0, Math.max(1, fit - 1)) + '\u2026' : text, a + 3, y + h / 2 + 0.5);
            }
          }
          continue;
        }
        var c0 = Math.max(0, Math.floor(x0)), c1 = Math.min(W - 1, Math.floor(x1));
        for (var c = c0; c <= c1; c++) cov[c * NE + (col < NE ? col : 0)] += Math.min(x1, c + 1) - Math.max(x0, c);
      }
      drawnCount += rects;
      if (lane.k === 'n' || lane.k === 'a') { columns(ctx, cov, y, h, function () { return lane.k === 'n' ? NVTX : API; }); return; }
      columns(ctx, cov, y, h, function (k) { return EC[k]; });
    }
    // Per pixel column, the busy share of each engine stacked from the bottom (at most full).
    function columns(ctx, cov, y, h, colourOf) {
      for (var c = 0; c < W; c++) {
        var used = 0;
        for (var k = 0; k < NE; k++) {
          var f = cov[c * NE + k];
          if (f <= 0) continue;
          var bh = Math.max(2, Math.min(h - used, f * h));  // at least 2 px: work is never invisible
          if (bh <= 0) break;
          ctx.fillStyle = colourOf(k); ctx.fillRect(c, y + h - used - bh, 1, bh); used += bh;
        }
      }
    }

    // Hover: the item under the pointer, its details, and the launch -> op link.
    function hit(r, t, tol) {
      var lane = lanes[r];
      if (!lane || !lane.n) return -1;
      var i = lastStarting(lane, t + tol), best = -1;
      for (var steps = 0; i >= 0 && steps < 2000 && lane.emax[i] >= t - tol; i--, steps++) {
        if (lane.e[i] >= t - tol) { best = i; if (lane.s[i] <= t && lane.e[i] >= t) break; }
      }
      return best;
    }
    function index() {
      if (calls) return;
      calls = {}; ops = {};
      lanes.forEach(function (lane, r) {
        if (!lane.corr) return;
        var map = lane.k === 'a' ? calls : ops, m = map[lane.pid] || (map[lane.pid] = new Map());
        for (var i = 0; i < lane.n; i++) if (lane.corr[i] && !m.has(lane.corr[i])) m.set(lane.corr[i], [r, i]);
      });
    }
    function partner(lane, i) {
      if (!lane.corr || !lane.corr[i]) return null;
      index();
      var m = (lane.k === 'a' ? ops : calls)[lane.pid];
      return m ? m.get(lane.corr[i]) || null : null;
    }
    function describe(r, i) {
      var lane = lanes[r], lines = [];
      if (lane.k === 's') {
        var L = lane.name[i] * 6, kind = labels[L + 2];
        lines.push(clip(names[labels[L]] || '', 2000));
        lines.push(kind === 0 ? 'kernel \u00b7 grid ' + labels[L + 4] + ' \u00b7 block ' + labels[L + 5] : fmtBytes(labels[L + 3]) + ' \u00b7 ' + ENGINES[labels[L + 1]] + ' engine');
      } else if (lane.k === 'e') lines.push(lane.engine >= 0 ? ENGINES[lane.engine] + ' engine busy (union of its ops)' : 'busy (union of its records)');
      else if (lane.k === 'c') lines.push((lane.name[i] / 1000 * lane.max).toPrecision(3) + ' ' + lane.unit + ' (the sample\u2019s; its lane\u2019s largest ' + lane.max.toPrecision(3) + ' ' + lane.unit + ')');
      else lines.push(clip(names[lane.name[i]] || '', 2000));
      lines.push(atO(lane.s[i]) + ', ' + fmt(lane.e[i] - lane.s[i]) + ' \u00b7 ' + lane.label);
      if (lane.corr && lane.corr[i]) lines.push('correlation ' + lane.corr[i]);
      var p = partner(lane, i);
      if (p) {
        var pl = lanes[p[0]];
        var where = pl.k === 'a' ? headerOf(p[0]) : pl.label;
        lines.push((lane.k === 'a' ? 'launched ' + display(labels[pl.name[p[1]] * 6]) : 'launched by ' + display(pl.name[p[1]])) + ' on ' + where + ' at ' + atO(pl.s[p[1]]));
      }
      return { lines: lines, partner: p };
    }
    function headerOf(r) { while (r > 0 && lanes[r].k !== 'h') r--; return lanes[r].label; }
    function gapAt(r, t) {
      for (var h = r; h >= 0; h--) {
        if (lanes[h].k !== 'h') continue;
        if (groupEnd[h] <= r || !lanes[h].gaps) return null;
        for (var j = 0; j < lanes[h].gaps.length; j++) { var gp = lanes[h].gaps[j]; if (gp.s <= t && t <= gp.e) return gp; }
        return null;
      }
      return null;
    }
    function outline(ctx, r, i, colourOfLine) {
      var lane = lanes[r], x0 = Math.max(-2, x(lane.s[i])), x1 = Math.min(W + 2, x(lane.e[i]));
      ctx.strokeStyle = colourOfLine; ctx.lineWidth = 2; ctx.strokeRect(x0 - 1, AH + r * RH + 1, Math.max(2, x1 - x0) + 2, RH - 2);
      return [Math.min(Math.max(x0, 0), W), AH + r * RH + RH / 2];
    }
    canvas.addEventListener('mousemove', function (ev) {
      if (drag) return;
      var rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left, py = ev.clientY - rect.top;
      var r = Math.floor((py - AH) / RH), t = g.v0 + px / W * (g.v1 - g.v0), tol = 2 / W * (g.v1 - g.v0);
      var octx = over.getContext('2d'); octx.clearRect(0, 0, W, H);
      var i = r >= 0 ? hit(r, t, tol) : -1, info = null;
      if (i >= 0) {
        info = describe(r, i);
        var a = outline(octx, r, i, '#1d2330');
        if (info.partner) {
          var b = outline(octx, info.partner[0], info.partner[1], '#d81b60');
          octx.strokeStyle = '#d81b60'; octx.lineWidth = 1.5; octx.beginPath(); octx.moveTo(a[0], a[1]); octx.lineTo(b[0], b[1]); octx.stroke();
        }
      } else if (r >= 0) {
        var gp = gapAt(r, t);
        if (gp) info = { lines: [names[gp.title] || ''] };
      }
      if (!info) { tip.hidden = true; return; }
      tip.textContent = info.lines.join('\n'); tip.hidden = false;
      var left = Math.min(px + 14, Math.max(0, W - tip.offsetWidth - 4));
      tip.style.left = left + 'px'; tip.style.top = (py + 16) + 'px';
    });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; over.getContext('2d').clearRect(0, 0, W, H); });
    var drag = null;
    function zoom(at, f) { var w = g.v1 - g.v0; g.set(g.v0 + w * at * (1 - f), g.v0 + w * at * (1 - f) + w * f); }
    function pan(share) { var w = g.v1 - g.v0; g.set(g.v0 + w * share, g.v1 + w * share); }
    function whole() { g.mark = null; g.set(0, g.span); }
    // The wheel zooms only while the timeline has focus (a click or Tab gives it); else the page scrolls.
    canvas.addEventListener('wheel', function (e) {
      if (!tl.contains(document.activeElement)) return;
      e.preventDefault();
      var rect = canvas.getBoundingClientRect();
      zoom((e.clientX - rect.left) / rect.width, e.deltaY < 0 ? 0.8 : 1.25);
    }, { passive: false });
    var KEYS = { ArrowLeft: function () { pan(-0.2); }, a: function () { pan(-0.2); },
                 ArrowRight: function () { pan(0.2); }, d: function () { pan(0.2); },
                 '+': function () { zoom(0.5, 0.5); }, '=': function () { zoom(0.5, 0.5); }, w: function () { zoom(0.5, 0.5); },
                 '-': function () { zoom(0.5, 2); }, s: function () { zoom(0.5, 2); },
                 '0': whole, Home: whole, Escape: function () { tl.blur(); } };
    tl.addEventListener('keydown', function (e) {
      var act = KEYS[e.key.length === 1 ? e.key.toLowerCase() : e.key];
      if (!act || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.target.tagName === 'BUTTON' && e.key.length === 1 && e.key !== '+' && e.key !== '-') return;
      e.preventDefault(); act();
    });
    canvas.addEventListener('mousedown', function (e) {
      drag = { x: e.clientX, v0: g.v0 }; tip.hidden = true;
      tl.focus({ preventScroll: true });
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var w = g.v1 - g.v0, v0 = drag.v0 - (e.clientX - drag.x) / W * w;
      g.set(v0, v0 + w);
    });
    window.addEventListener('mouseup', function () { drag = null; });
    canvas.addEventListener('dblclick', whole);
    tl.querySelectorAll('button[data-zoom]').forEach(function (b) {
      b.addEventListener('click', function () {
        var z = b.dataset.zoom;
        if (z === 'reset') whole();
        else if (z === 'steady' && g.steady) { g.mark = null; g.set(g.steady[0], g.steady[1]); }
        else zoom(0.5, z === 'in' ? 0.5 : 2);
      });
    });
    window.addEventListener('resize', function () { self.request(); });
    draw();
  }
})();
)JS";

}  // namespace cuoverlap::html
