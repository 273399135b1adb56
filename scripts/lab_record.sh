#!/usr/bin/env bash
# On a GPU host: build the lab, generate PROGRAM_COUNT programs from SEED (workloads/lab/labgen),
# record them in batches (one `cuoverlap record` of `cuoverlap-lab run` per batch, every variant
# REPS times, interleaved) and collect everything into OUT_DIR/corpus (docs/lab.md):
# manifest.json, the trimmed batch traces (gzip-compressed: BATCH.sqlite.gz), programs.jsonl.gz.
# Log: OUT_DIR/lab_record.log.
#   Usage: scripts/lab_record.sh OUT_DIR [PROGRAM_COUNT (320)] [SEED (1)]
#   Env: PROGRAMS=FILE (record these corpus lines instead of generating; a .gz file too, such as a
#        corpus's programs.jsonl.gz to record that corpus again), BUILD_DIR (build-gpu), REPS (15), BATCH (50 programs), BATCH_TIMEOUT (240 s per batch),
#        SKIP_BUILD=1 (use what BUILD_DIR holds), VARIANT_TRACES=1 (also OUT_DIR/variants: every variant's
#        median run, for scripts/lab_variant_ops.py), WINDOWS=K (1: keep the K baseline runs nearest
#        the median span, lab_collect.py --windows), STAGE=record (record the batches and stop) or
#        STAGE=collect (collect what OUT_DIR/batches holds: a recording cut in two device calls),
#        GPU_METRICS=US (record --gpu-metrics US: GPU metrics sampled every US µs, kept in the windows),
#        ORDER=fixed|shuffle (cuoverlap-lab run --order; default shuffle: each rep runs the variants
#        in an order of its own, docs/lab.md "Running the lab"; fixed: baseline first, then by name)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:?usage: lab_record.sh OUT_DIR [PROGRAM_COUNT] [SEED]}
count=${2:-320}
seed=${3:-1}
build=${BUILD_DIR:-build-gpu}
reps=${REPS:-15}
batch=${BATCH:-50}
batch_timeout=${BATCH_TIMEOUT:-240}
mkdir -p "$out/batches" "$out/corpus"
out=$(cd "$out" && pwd)
logfile=$out/lab_record.log
log() { echo "[$(date +%T)] $*" | tee -a "$logfile"; }
started=$(date +%s)
stage=${STAGE:-all}
case "$stage" in all|record|collect) ;; *) echo "lab_record.sh: STAGE must be record or collect, not '$stage'" >&2; exit 2 ;; esac

if [ "$stage" != collect ]; then
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "build ($build, Release): cuoverlap, the collector, cuoverlap-lab"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 \
    || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build "$build" -j"$(nproc)" --target cuoverlap cuoverlap_collector cuoverlap-lab > "$out/build.log" 2>&1 \
    || { grep -B2 -A8 -E "error|FAILED" "$out/build.log" | head -80; exit 1; }
fi
cli=$root/$build/cli/cuoverlap
lab=$root/$build/workloads/lab/cuoverlap-lab
machine=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
log "machine: ${machine:-unknown}"
log "variant order in each rep: ${ORDER:-shuffle}"

if [ -n "${PROGRAMS:-}" ]; then
  log "programs from $PROGRAMS"
  # A corpus's own programs.jsonl.gz records it again (a replica: docs/lab.md).
  case "$PROGRAMS" in
    *.gz) gzip -dc "$PROGRAMS" > "$out/programs.jsonl" || exit 1 ;;
    *) cp "$PROGRAMS" "$out/programs.jsonl" || exit 1 ;;
  esac
else
  log "generate $count programs, seed $seed"
  (cd workloads/lab && python3 -m labgen generate --seed "$seed" --count "$count" --out "$out/programs.jsonl") \
    >> "$logfile" 2>&1 || { log "the generator failed (see above)"; exit 1; }
fi
"$lab" check "$out/programs.jsonl" 2>&1 | tee -a "$logfile"
[ "${PIPESTATUS[0]}" = 0 ] || { log "the generated programs do not validate"; exit 1; }
rm -f "$out"/batches/batch*
split -l "$batch" -d -a 3 --additional-suffix=.jsonl "$out/programs.jsonl" "$out/batches/batch"

failed_batches=0
for programs in "$out"/batches/batch[0-9][0-9][0-9].jsonl; do
  name=$(basename "$programs" .jsonl)
  t0=$(date +%s.%N)
  timeout --kill-after=10 "$batch_timeout" "$cli" record --force ${GPU_METRICS:+--gpu-metrics "$GPU_METRICS"} -o "$out/batches/$name.sqlite" -- \
    "$lab" run "$programs" --reps "$reps" --order "${ORDER:-shuffle}" --results "$out/batches/$name.results.jsonl" \
    > "$out/batches/$name.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  lines=$(wc -l < "$programs")
  runs=$(cat "$out/batches/$name.results.jsonl" 2>/dev/null | wc -l)
  bad=$(grep -c '"ok":false' "$out/batches/$name.results.jsonl" 2>/dev/null)
  log "$name: $lines programs, $runs runs (${bad:-0} failed), rc=$rc, $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
  [ "$rc" = 0 ] || { failed_batches=$((failed_batches + 1)); grep -m3 -E "^error" "$out/batches/$name.log" | tee -a "$logfile"; }
  [ -s "$out/batches/$name.sqlite" ] && touch "$out/batches/$name.results.jsonl"
done
echo "$failed_batches" > "$out/batches/failed_batches"
if [ "$stage" = record ]; then
  log "recorded in $(( $(date +%s) - started )) s; $failed_batches batches exited non-zero; collect with STAGE=collect"
  exit 0
fi
fi

failed_batches=$(cat "$out/batches/failed_batches" 2>/dev/null || echo 0)
machine=${machine:-$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)}
collect_args=()
for programs in "$out"/batches/batch[0-9][0-9][0-9].jsonl; do
  name=$(basename "$programs" .jsonl)
  [ -s "$out/batches/$name.sqlite" ] || continue
  collect_args+=(--batch "$out/batches/$name.sqlite" "$programs" "$out/batches/$name.results.jsonl")
done

[ ${#collect_args[@]} -gt 0 ] || { log "no batch left a trace"; exit 1; }
log "collect -> $out/corpus"
collect_options=()
[ "${VARIANT_TRACES:-0}" = 1 ] && collect_options=(--variant-traces "$out/variants")
collect_options+=(--windows "${WINDOWS:-1}" --compress)
python3 scripts/lab_collect.py "$out/corpus" --machine "${machine:-unknown}" "${collect_options[@]}" "${collect_args[@]}" 2>&1 | tee -a "$logfile"
[ "${PIPESTATUS[0]}" = 0 ] || { log "lab_collect.py failed"; exit 1; }
python3 scripts/lab_streams.py "$out/corpus" 2>&1 | tee -a "$logfile"
du -sh "$out/corpus" | tee -a "$logfile"
log "done in $(( $(date +%s) - started )) s; $failed_batches batches exited non-zero"
