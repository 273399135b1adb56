#!/bin/sh
# Renders HTML reports in headless Chromium and saves screenshots, so that a person can look at
# them, and fails when a page does not render or its script fails: the report of TRACE, the
# multi-GPU trace MULTI_GPU_TRACE (both devices on one axis), the report of STEADY_TRACE (a run
# with a steady state shorter than the run, gaps and NCCL kernels) on which a user's actions are
# checked in the real browser (html_interact_check.js: opening view, wheel focus, keys, a gap
# link, labels, API names, device cards), a large synthetic trace of LARGE_OPS ops written by
# GENERATOR (`cuoverlap_bench_analyzer gen N PATH`) whose script must decode and draw it within a
# bound, and that page opened zoomed (#zoom=a:b) to a few microseconds, where single ops must be
# drawn as rectangles; hovering an op of TRACE must show the call that launched it. Exits 77
# (ctest: skipped) when chromium is not installed.
# usage: html_screenshot.sh CUOVERLAP_BINARY TRACE OUT_DIR [MULTI_GPU_TRACE [STEADY_TRACE [GENERATOR [LARGE_OPS]]]]
set -eu
cli=$1 trace=$2 out=$3 multi_gpu=${4:-} steady=${5:-} generator=${6:-} large_ops=${7:-2000000}
here=$(cd "$(dirname "$0")" && pwd)
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium not installed (apt-get install chromium)"
  exit 77
fi
mkdir -p "$out"

# chromium ARGS...: a fresh profile per run; --no-sandbox because tests may run as root in
# containers; console messages go to $out/chromium.log.
chromium() {
  rm -rf "$out/profile"
  "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" \
    --enable-logging=stderr --v=0 "$@" 2>>"$out/chromium.log"
}

# shot NAME [FRAGMENT]: screenshot of $out/NAME.html into $out/NAME[-zoomed].png, then checks it.
shot() {
  png=$out/$1${2:+-zoomed}.png
  : >"$out/chromium.log"
  chromium --window-size=1366,1600 --screenshot="$png" "file://$out/$1.html${2:-}" >/dev/null
  if grep -q "Uncaught" "$out/chromium.log"; then
    echo "FAILED: the script of $1.html threw:"; grep "Uncaught" "$out/chromium.log"; exit 1
  fi
  size=$(wc -c <"$png")
  # An empty or blank page compresses to a few kilobytes; the report is far larger.
  if [ "$size" -lt 20000 ]; then
    echo "FAILED: screenshot $png is only $size bytes"; exit 1
  fi
  echo "screenshot: $png ($size bytes)"
}

# attribute NAME FRAGMENT ATTRIBUTE: the value the page's script left in ATTRIBUTE.
attribute() {
  chromium --window-size=1366,1600 --dump-dom "file://$out/$1.html${2:-}" \
    | grep -o "$3=\"[^\"]*\"" | head -1 | sed 's/.*="\(.*\)"/\1/'
}

# hover NAME: moves the pointer over the stream lanes of $out/NAME.html (in a frame) until a
# tooltip names the call that launched the op, and screenshots that as $out/NAME-hover.png.
hover() {
  cat >"$out/$1-hover.html" <<HTML
<html><body style="margin:0"><iframe id="f" src="$1.html" style="width:1366px;height:1000px;border:0"></iframe>
<script>
document.getElementById('f').onload = function () {
  var d = this.contentDocument, c = d.querySelector('canvas.tl-plot'), r = c.getBoundingClientRect();
  var tip = d.querySelector('.tl-tip'), rows = d.querySelectorAll('.tl-labels > div[data-k]');
  for (var row = 0; row < rows.length; row++) {
    if (rows[row].dataset.k !== 's') continue;
    for (var i = 0; i < 400; i++) {
      c.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + r.width * i / 400, clientY: r.top + 22 + row * 18 + 9, bubbles: true }));
      if (!tip.hidden && tip.textContent.indexOf('launched by') >= 0) { document.title = 'tooltip: ' + tip.textContent.split('\n').join(' | '); return; }
    }
  }
  document.title = 'no launch link found';
};
</script></body></html>
HTML
  : >"$out/chromium.log"
  chromium --allow-file-access-from-files --window-size=1366,1000 --virtual-time-budget=5000 \
    --screenshot="$out/$1-hover.png" "file://$out/$1-hover.html" >/dev/null
  title=$(chromium --allow-file-access-from-files --virtual-time-budget=5000 --dump-dom \
    "file://$out/$1-hover.html" | grep -o "<title>[^<]*" | sed 's/<title>//')
  echo "hover: $title"
  case "$title" in tooltip:*"launched by"*) ;; *) echo "FAILED: no launch -> op link on hover"; exit 1 ;; esac
}

# interact NAME: $out/NAME.html with html_interact_check.js appended (and requestAnimationFrame as
# a timer, see there) in $out/NAME-interact.html; fails unless every check passed.
interact() {
  page=$out/$1-interact.html
  awk -v check="$here/html_interact_check.js" '
    !pre && /<script>/ { print "<script>window.requestAnimationFrame = function (f) { return setTimeout(function () { f(performance.now()); }, 16); };</script>"; pre = 1 }
    /<\/body>/ {
      at = index($0, "</body>"); print substr($0, 1, at - 1); print "<script>"
      while ((getline line < check) > 0) print line
      print "</script>" substr($0, at); next
    }
    { print }' "$out/$1.html" >"$page"
  : >"$out/chromium.log"
  chromium --window-size=1366,900 --virtual-time-budget=20000 --dump-dom "file://$page" >/dev/null
  result=$(grep -o 'interact: .*", source' "$out/chromium.log" | sed 's/", source$//' | head -1)
  echo "$1: $result"
  case "$result" in "interact: ok:"*) ;; *) echo "FAILED: the page's behaviour in Chromium"; exit 1 ;; esac
}

name=$(basename "$trace" .gz); name=${name%.sqlite}
"$cli" analyze "$trace" --force --format html -o "$out/$name.html"
shot "$name"
hover "$name"
[ -n "$multi_gpu" ] || exit 0
"$cli" analyze "$multi_gpu" --force --format html -o "$out/multi_gpu.html"
shot multi_gpu
[ -n "$steady" ] || exit 0
"$cli" analyze "$steady" --force --format html -o "$out/steady.html"
shot steady
interact steady
[ -n "$generator" ] || exit 0

"$generator" gen "$large_ops" "$out/large.sqlite"
"$cli" analyze "$out/large.sqlite" --force --format html -o "$out/large.html"
echo "large page: $(wc -c <"$out/large.html") bytes for $large_ops ops"
shot large
# data-timeline-ms: "decode+draw ms, ms since navigation". A 2M-op page takes about 1 s / 2 s here.
timing=$(attribute large "" data-timeline-ms)
echo "large page: script ${timing%% *} ms, ready ${timing##* } ms after navigation"
if [ -z "$timing" ] || [ "${timing%% *}" -gt 20000 ]; then
  echo "FAILED: the large page's script took '${timing}' ms"; exit 1
fi

zoom="#zoom=0.727:0.727003"
shot large "$zoom"
view=$(attribute large "$zoom" data-view)
drawn=$(attribute large "$zoom" data-drawn)
echo "zoomed page: view $view, $drawn ops drawn as rectangles"
if [ "$view" != "0.727000:0.727003" ] || [ "${drawn:-0}" -lt 5 ]; then
  echo "FAILED: the zoomed page shows '$view' with '$drawn' rectangles"; exit 1
fi
rm -f "$out/large.sqlite"  # 100 MB
