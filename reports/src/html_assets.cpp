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
.tl:focus,.tl:focus-within{outline:2px solid var(--accent);outline-offset:1px}
a.jump{color:var(--accent);text-decoration:none;border-bottom:1px dotted}
.card.who .v{font-size:15px;overflow-wrap:anywhere}
.tl-controls{display:flex;gap:6px;margin-bottom:6px;align-items:center}
.tl-controls button{font:inherit;font-size:12px;padding:2px 10px;border:1px solid var(--line);border-radius:4px;background:#fff;cursor:pointer}
.tl-view{color:var(--muted);font-size:12px;margin-left:8px}
.tl-body{display:grid;grid-template-columns:13rem minmax(0,1fr)}
.tl-labels>div{height:18px;line-height:18px;font-size:11.5px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding-right:6px;color:var(--muted)}
.tl-labels>div.tl-corner{height:22px}
.tl-labels>div.kh{color:var(--fg);font-weight:600;background:#eef0f4}
.tl-main{min-width:0;position:relative}
canvas.tl-plot{display:block;width:100%;cursor:grab;background:#fff}
canvas.tl-over{position:absolute;left:0;top:0;pointer-events:none}
.tl-tip{position:absolute;z-index:2;max-width:560px;background:#1d2330;color:#fff;font-size:12px;line-height:1.35;padding:6px 8px;border-radius:4px;pointer-events:none;white-space:pre-wrap;overflow-wrap:anywhere}
:root{--e-compute:#3b73b9;--e-comm:#c8435a;--e-h2d:#3f9b4f;--e-d2h:#e8832a;--e-d2d:#9a62b3;--e-other_copy:#8c6d52;--e-memset:#c9a21a;--nvtx:#7a8699;--api:#5b8fa8;
--g-sync-wait:#e53935;--g-allocation:#8e24aa;--g-pageable-staging:#fb8c00;--g-host-launch:#00acc1;--g-dependency:#3949ab;--g-host-busy:#6d4c41;--g-module-load:#2e7d32;--g-unknown:#9e9e9e}
.e-compute{background:var(--e-compute)}.e-h2d{background:var(--e-h2d)}.e-d2h{background:var(--e-d2h)}
.e-d2d{background:var(--e-d2d)}.e-other_copy{background:var(--e-other_copy)}.e-memset{background:var(--e-memset)}.e-comm{background:var(--e-comm)}
.nvtx{background:var(--nvtx)}.api{background:var(--api)}
.gap{background:var(--g-unknown)}
.g-sync-wait{background:var(--g-sync-wait)}.g-allocation{background:var(--g-allocation)}.g-pageable-staging{background:var(--g-pageable-staging)}
.g-host-launch{background:var(--g-host-launch)}.g-dependency{background:var(--g-dependency)}.g-host-busy{background:var(--g-host-busy)}
.g-module-load{background:var(--g-module-load)}.g-unknown{background:var(--g-unknown)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin-top:8px}
.legend span{display:inline-flex;align-items:center;gap:4px}
i.sw{display:inline-block;width:12px;height:12px;border-radius:2px}
.note{color:var(--muted);font-size:12px;margin:6px 0 0}
.finding{border:1px solid var(--line);border-left:5px solid #d4b02a;border-radius:6px;padding:8px 12px;margin:10px 0}
.finding.sev-error{border-left-color:#b3261e}.finding.sev-info{border-left-color:#3b73b9}
.finding h4{margin:0 0 4px;overflow-wrap:anywhere}.finding .meta{color:var(--muted);font-size:12px}
.badge{display:inline-block;font-size:11px;text-transform:uppercase;padding:1px 6px;border-radius:3px;background:var(--card);border:1px solid var(--line);margin-right:6px}
.fix{background:#eef5ec;border-radius:4px;padding:6px 8px}
.warn{background:#fdf3e1;border-left:4px solid #d08a00;border-radius:4px;padding:6px 8px;overflow-wrap:anywhere}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere}
)CSS";

// kScript: html_timeline_script.cpp.

}  // namespace cuoverlap::html
