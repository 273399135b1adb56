#!/bin/bash
# cli_summary_recipe: the recipe of docs/summaries.md with local processes standing in for nodes,
# on committed traces (no GPU): each "node" holds its ranks' traces and summarizes them where they
# lie (in parallel, as `srun --ntasks-per-node=1` would), the summaries are gathered, and the job
# is analyzed and gated from them. Checks: the JSON job report from the gathered summaries equals
# the one from the traces byte for byte; the gate passes and fails on the summaries as on the
# traces; a summary gathered twice is an error naming both files, exit 2.
# Usage: summary_recipe.sh CUOVERLAP DATA_DIR WORK_DIR
set -euo pipefail
cuoverlap=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)
fail() { echo "cli_summary_recipe: FAILED: $*" >&2; exit 1; }

# The job: FSDP on two ranks, one "node" each (the traces stay there).
for rank in 0 1; do
  mkdir -p "$work/node$rank/traces"
  gzip -dc "$data/ddp/fsdp_rank$rank.sqlite.gz" > "$work/node$rank/traces/rank$rank.sqlite"
done

# Recipe, step 2: on every node, summarize its traces beside them.
for node in "$work"/node*; do
  "$cuoverlap" summarize -q "$node"/traces/*.sqlite &
done
wait

# Step 3: gather the summaries (scp/rsync/a shared folder on a cluster).
mkdir -p "$work/gathered"
cp "$work"/node*/traces/*.cosum "$work/gathered/"
[ "$(ls "$work/gathered" | wc -l)" = 2 ] || fail "expected 2 summaries"

# Step 4: analyze and gate the job from the summaries.
"$cuoverlap" analyze --format json "$work"/gathered/*.cosum -o "$work/from_summaries.json"
"$cuoverlap" analyze --format json "$work"/node*/traces/*.sqlite -o "$work/from_traces.json"
cmp "$work/from_summaries.json" "$work/from_traces.json" || fail "job report from summaries differs"
grep -q '"rank-straggler"' "$work/from_summaries.json" || fail "no rank-straggler in the job report"

"$cuoverlap" gate --max-rank-skew 1s "$work"/gathered/*.cosum >/dev/null || fail "gate should pass"
set +e
"$cuoverlap" gate "$work"/gathered/*.cosum --fail-on rank-straggler >/dev/null
summaries_gate=$?
"$cuoverlap" gate "$work"/node*/traces/*.sqlite --fail-on rank-straggler >/dev/null
traces_gate=$?
cp "$work/gathered/rank1.cosum" "$work/gathered/rank1-again.cosum"
"$cuoverlap" analyze "$work"/gathered/*.cosum >/dev/null 2>"$work/twice.err"
twice=$?
set -e
[ "$summaries_gate" = 1 ] && [ "$traces_gate" = 1 ] ||
  fail "gate --fail-on rank-straggler: $summaries_gate on summaries, $traces_gate on traces (want 1)"
[ "$twice" = 2 ] || fail "a summary gathered twice: exit $twice (want 2)"
grep "rank1-again.cosum" "$work/twice.err" | grep -q "rank1.cosum" || fail "the error names both files"
echo "cli_summary_recipe: ok"
