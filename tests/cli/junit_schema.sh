#!/usr/bin/env bash
# junit_schema.sh CUOVERLAP TRACE WORK: gate --junit on a passing, a failing and a bad-input run;
# each file must validate against junit.xsd (xmllint) and carry time/timestamp/hostname; the
# bad-input run (exit 2) must still write one errored testcase. Exit 77 (skipped) without xmllint.
set -uo pipefail
cli=$1 trace=$2 work=$3
command -v xmllint >/dev/null || { echo "xmllint not installed (Debian: libxml2-utils): skipped"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cli" gate "$trace" --max-idle-fraction 1 --junit "$work/pass.xml" >/dev/null; [ $? -eq 0 ] || fail "pass run"
"$cli" gate "$trace" --min-overlap 1 --junit "$work/fail.xml" >/dev/null; [ $? -eq 1 ] || fail "fail run"
"$cli" gate "$work/missing.sqlite" --min-overlap 0.5 --junit "$work/error.xml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad-input run should exit 2"
for f in pass fail error; do
  xmllint --noout --schema "$here/junit.xsd" "$work/$f.xml" || fail "$f.xml does not validate"
  grep -q 'timestamp="20[0-9-]*T' "$work/$f.xml" || fail "$f.xml has no timestamp"
  grep -q 'hostname="' "$work/$f.xml" || fail "$f.xml has no hostname"
  grep -q '<testcase [^>]*time="' "$work/$f.xml" || fail "$f.xml testcases have no time"
done
grep -q '<failure ' "$work/fail.xml" || fail "fail.xml has no failure"
grep -q 'errors="1"' "$work/error.xml" && grep -q '<error message=".*missing.sqlite' "$work/error.xml" \
  || fail "error.xml does not carry the error"
echo "junit ok"
