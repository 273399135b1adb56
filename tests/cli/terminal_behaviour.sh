#!/usr/bin/env bash
# terminal_behaviour.sh CUOVERLAP TRACE: what a user sees on a terminal (a pty made by script(1)):
# colour on a terminal and off elsewhere (--color, NO_COLOR), prose wrapped to COLUMNS, and
# export refusing to pour JSON into a terminal unless -o - asks for it. Exit 77 without script(1).
set -uo pipefail
cli=$1 trace=$2
command -v script >/dev/null || { echo "script(1) not installed: skipped"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
on_tty() { script -qec "$1" /dev/null; }  # runs $1 with stdout and stderr on a pty
esc=$'\x1b['

out=$(on_tty "env -u NO_COLOR COLUMNS=60 $cli analyze $trace")
[[ $out == *"$esc"* ]] || fail "no colour on a terminal"
# Prose (finding summaries and fixes) is wrapped to the terminal's width.
while IFS= read -r line; do
  line=${line%$'\r'}
  plain=$(printf '%s' "$line" | sed 's/\x1b\[[0-9;]*m//g')
  case $plain in
    "  ["*|"      fix:"*) [ "${#plain}" -le 60 ] || fail "wrapped line longer than 60: $plain" ;;
  esac
done <<< "$out"
out=$(on_tty "env NO_COLOR=1 $cli analyze $trace")
[[ $out != *"$esc"* ]] || fail "colour despite NO_COLOR"
out=$(on_tty "$cli analyze $trace --color never")
[[ $out != *"$esc"* ]] || fail "colour despite --color never"
out=$("$cli" analyze "$trace")
[[ $out != *"$esc"* ]] || fail "colour into a pipe"
out=$("$cli" analyze "$trace" --color always)
[[ $out == *"$esc"* ]] || fail "no colour with --color always"

out=$(on_tty "$cli export $trace"); rc=$?
[ $rc -eq 2 ] || fail "export to a terminal: exit $rc"
[[ $out == *"give -o FILE"* ]] || fail "export to a terminal: $out"
out=$(on_tty "$cli export $trace -o -") || fail "export -o - to a terminal"
[[ $out == *traceEvents* ]] || fail "export -o - wrote no JSON"
out=$("$cli" export "$trace") || fail "export into a pipe"
[[ $out == *traceEvents* ]] || fail "export into a pipe wrote no JSON"
echo "terminal ok"
