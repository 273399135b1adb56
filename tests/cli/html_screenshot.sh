#!/bin/sh
# Renders the HTML report of a trace in headless Chromium and saves a screenshot, so that a person
# can look at it (and the test fails when the page does not render). Exits 77 (ctest: skipped)
# when chromium is not installed.
# usage: html_screenshot.sh CUOVERLAP_BINARY TRACE OUT_DIR
set -eu
cli=$1 trace=$2 out=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium not installed (apt-get install chromium)"
  exit 77
fi
mkdir -p "$out"
name=$(basename "$trace" .sqlite)
"$cli" analyze "$trace" --format html -o "$out/$name.html"
# A fresh profile per run; --no-sandbox because tests may run as root in containers.
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$out/profile" \
  --window-size=1366,2400 --screenshot="$out/$name.png" "file://$out/$name.html" >"$out/chromium.log" 2>&1
size=$(wc -c <"$out/$name.png")
# An empty or blank page compresses to a few kilobytes; the report is far larger.
if [ "$size" -lt 20000 ]; then
  echo "FAILED: screenshot $out/$name.png is only $size bytes"
  exit 1
fi
echo "screenshot: $out/$name.png ($size bytes)"
