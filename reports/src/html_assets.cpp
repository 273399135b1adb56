#include "html_assets.h"

namespace cuoverlap::html {

const char* const kStyleSheet = R"CSS(
:root{--fg:#1d2330;--muted:#5d6675;--line:#d9dde4;--card:#f6f7f9;--accent:#2f6fb0}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fff}
main{max-width:1180px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:2px solid var(--line);padding-bottom:4px;overflow-wrap:anywhere}
h3{font-size:16px;margin:22px 0 8px}h4{font-size:14px;margin:16px 0 6px}
.sub{color:var(--muted);margin:0 0 10px;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(165px,1fr));gap:10px;margin:8px 0 12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.card .v{font-size:24px;font-weight:600}.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card .d{color:var(--muted);font-size:12px}
.card.bad .v{color:#b3261e}.card.ok .v{color:#1e7b34}
.facts{color:var(--muted);margin:4px 0 10px}
.engines{display:grid;grid-template-columns:7rem 1fr 9rem;gap:3px 10px;align-items:center;margin:6px 0 12px;max-width:720px}
.bar{background:var(--card);border:1px solid var(--line);height:12px;border-radius:3px;overflow:hidden}.bar i{display:block;height:100%}
table{border-collapse:collapse;width:100%;table-layout:fixed;margin:6px 0 12px}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{color:var(--muted);font-weight:600;font-size:12px}
.tl{border:1px solid var(--line);border-radius:8px;padding:8px;margin:10px 0}
.tl-controls{display:flex;gap:6px;margin-bottom:6px}
.tl-controls button{font:inherit;font-size:12px;padding:2px 10px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
.tl-body{display:grid;grid-template-columns:10rem minmax(0,1fr)}
.tl-labels div{height:22px;line-height:22px;font-size:12px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-right:6px;color:var(--muted)}
.tl-main{min-width:0}
svg.tl-plot{display:block;width:100%;cursor:grab;background:#fff}
.tl-axis{position:relative;height:18px;border-top:1px solid var(--fg);font-size:11px;color:var(--muted);overflow:hidden}
.tl-axis span{position:absolute;top:1px;white-space:nowrap;border-left:1px solid var(--muted);padding-left:2px}
rect.stripe{fill:#f3f4f7}
.e-compute{fill:#3b73b9;background:#3b73b9}.e-h2d{fill:#3f9b4f;background:#3f9b4f}.e-d2h{fill:#e8832a;background:#e8832a}
.e-d2d{fill:#9a62b3;background:#9a62b3}.e-other_copy{fill:#8c6d52;background:#8c6d52}.e-memset{fill:#d4b02a;background:#d4b02a}.e-comm{fill:#c8435a;background:#c8435a}
.nvtx{fill:#7a8699;background:#7a8699}
rect.merged{opacity:.75}
.gap{opacity:.45}
.g-sync-wait{fill:#e35d5b;background:#e35d5b}.g-allocation{fill:#f29cb4;background:#f29cb4}.g-pageable-staging{fill:#f4b860;background:#f4b860}
.g-host-launch{fill:#7cc6c0;background:#7cc6c0}.g-dependency{fill:#b8a9d9;background:#b8a9d9}.g-unknown{fill:#c9ccd1;background:#c9ccd1}
.g-module-load{fill:#9bb86a;background:#9bb86a}.g-host-busy{fill:#e8d46a;background:#e8d46a}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin-top:8px}
.legend span{display:inline-flex;align-items:center;gap:4px}
i.sw{display:inline-block;width:12px;height:12px;border-radius:2px}
.note{color:var(--muted);font-size:12px;margin:6px 0 0}
.finding{border:1px solid var(--line);border-left:5px solid #d4b02a;border-radius:6px;padding:8px 12px;margin:10px 0}
.finding.sev-error{border-left-color:#b3261e}.finding.sev-info{border-left-color:#3b73b9}
.finding h4{margin:0 0 4px;overflow-wrap:anywhere}.finding .meta{color:var(--muted);font-size:12px}
.badge{display:inline-block;font-size:11px;text-transform:uppercase;padding:1px 6px;border-radius:3px;background:var(--card);border:1px solid var(--line);margin-right:6px}
.fix{background:#eef5ec;border-radius:4px;padding:6px 8px}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere}
)CSS";

const char* const kScript = R"JS(
(function () {
  function fmt(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(1) + ' \u00b5s';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function tickStep(range) {
    var raw = Math.max(1, range / 8), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  document.querySelectorAll('.tl').forEach(function (tl) {
    var svg = tl.querySelector('svg.tl-plot'), axis = tl.querySelector('.tl-axis');
    var span = Number(tl.dataset.span), H = Number(svg.dataset.h), W = 1000;
    var minW = Math.min(W, W * 100 / span), x0 = 0, w = W, drag = null;
    function draw() {
      svg.setAttribute('viewBox', x0 + ' 0 ' + w + ' ' + H);
      var t0 = x0 / W * span, t1 = (x0 + w) / W * span, step = tickStep(t1 - t0), html = '';
      for (var i = Math.ceil(t0 / step); i * step <= t1; i++) {
        var left = (i * step - t0) / (t1 - t0) * 100;
        if (left > 94) break;  // a label there would be cut off at the right edge
        html += '<span style="left:' + left.toFixed(2) + '%">+' + fmt(i * step) + '</span>';
      }
      axis.innerHTML = html;
      tl.setAttribute('data-view', (x0 / W).toFixed(4) + ':' + ((x0 + w) / W).toFixed(4));
    }
    function zoom(factor, at) {
      var nw = Math.min(W, Math.max(minW, w * factor));
      x0 = Math.min(W - nw, Math.max(0, x0 + (w - nw) * at));
      w = nw;
      draw();
    }
    svg.addEventListener('wheel', function (e) {
      e.preventDefault();
      var r = svg.getBoundingClientRect();
      zoom(e.deltaY < 0 ? 0.8 : 1.25, (e.clientX - r.left) / r.width);
    }, { passive: false });
    svg.addEventListener('mousedown', function (e) { drag = { x: e.clientX, x0: x0 }; });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      x0 = Math.min(W - w, Math.max(0, drag.x0 - (e.clientX - drag.x) / r.width * w));
      draw();
    });
    window.addEventListener('mouseup', function () { drag = null; });
    svg.addEventListener('dblclick', function () { x0 = 0; w = W; draw(); });
    tl.querySelectorAll('button[data-zoom]').forEach(function (b) {
      b.addEventListener('click', function () {
        if (b.dataset.zoom === 'reset') { x0 = 0; w = W; draw(); }
        else zoom(b.dataset.zoom === 'in' ? 0.5 : 2, 0.5);
      });
    });
    // A link can open zoomed in: report.html#zoom=0.25:0.5 shows that part of every timeline.
    var m = /zoom=([0-9.]+):([0-9.]+)/.exec(location.hash);
    if (m && Number(m[2]) > Number(m[1])) {
      w = Math.max(minW, Math.min(W, (Number(m[2]) - Number(m[1])) * W));
      x0 = Math.min(W - w, Math.max(0, Number(m[1]) * W));
    }
    draw();
  });
})();
)JS";

}  // namespace cuoverlap::html
