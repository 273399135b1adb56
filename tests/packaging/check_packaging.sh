#!/usr/bin/env bash
# check_packaging.sh BUILD_DIR WORK_DIR: `cmake --install` into a prefix and `cpack -G DEB`, then
# checks what a user gets: the command runs from the prefix, a man page per command with its
# options, examples, exit status and environment, shell completions that offer each command's own
# options and values, docs, and a .deb that holds the same files.
set -euo pipefail
build=$(cd "$1" && pwd) work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
p=$work/prefix
"$p/bin/cuoverlap" --version | grep -qE '^[0-9]+\.[0-9]+' || fail "installed cuoverlap --version"
# A page per command, each with its options, examples, exit status and environment (from --help).
commands=$("$p/bin/cuoverlap" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
for page in cuoverlap $(printf 'cuoverlap-%s ' $commands); do
  f=$p/share/man/man1/$page.1
  [ -s "$f" ] || fail "missing man page $page.1"
  for section in OPTIONS EXAMPLES 'EXIT STATUS' ENVIRONMENT; do
    grep -q "^.SH $section\$" "$f" || fail "$page.1 has no $section section"
  done
  if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$f" 2>"$work/groff.log" || fail "groff $page.1"
    [ ! -s "$work/groff.log" ] || { cat "$work/groff.log"; fail "groff warnings on $page.1"; }
  fi
done
grep -q -- '--format' "$p/share/man/man1/cuoverlap-analyze.1" || fail "analyze page lacks --format"
grep -q -- 'cuoverlap analyze run.sqlite -o report.html' "$p/share/man/man1/cuoverlap-analyze.1" ||
  fail "analyze page lacks its examples"
bash -n "$p/share/bash-completion/completions/cuoverlap" || fail "bash completion syntax"
# The bash completion offers the subcommands, the options read from --help and, after an option,
# only the values that command's option takes.
complete_bash() {  # complete_bash WORD...: what bash offers for the last word
  PATH=$p/bin:$PATH bash -c 'source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _cuoverlap;
                             echo "${COMPREPLY[*]}"' "$p/share/bash-completion/completions/cuoverlap" "$@"
}
[ "$(complete_bash cuoverlap an)" = analyze ] || fail "bash completion of 'an': $(complete_bash cuoverlap an)"
complete_bash cuoverlap gate --min-o | grep -q -- '--min-overlap' || fail "bash completion of gate options"
[ "$(complete_bash cuoverlap export x --format '')" = "perfetto kineto" ] ||
  fail "bash: export --format offers '$(complete_bash cuoverlap export x --format '')'"
[ "$(complete_bash cuoverlap analyze x --format '')" = "text json markdown html" ] ||
  fail "bash: analyze --format offers '$(complete_bash cuoverlap analyze x --format '')'"
[ "$(complete_bash cuoverlap diff a b --format '')" = "text json markdown" ] || fail "bash: diff --format"
[ "$(complete_bash cuoverlap gate x --scope '')" = "auto steady whole" ] || fail "bash: gate --scope"
# zsh: the same, with _arguments and _describe stubbed to print what they were given.
if command -v zsh >/dev/null; then
  zsh -n "$p/share/zsh/vendor-completions/_cuoverlap" || fail "zsh syntax"
  complete_zsh() {  # complete_zsh WORD...
    PATH=$p/bin:$PATH zsh -c '_arguments() { print -l -- "$@" }; _describe() { print -l -- "${(@P)4}" }
                              f=$1; shift; words=("$@"); CURRENT=$#; source $f' _ \
      "$p/share/zsh/vendor-completions/_cuoverlap" "$@"
  }
  complete_zsh cuoverlap export x --format '' | grep -qx -- '--format\[option\]:value:(perfetto kineto)' ||
    fail "zsh: export --format: $(complete_zsh cuoverlap export x --format '' | grep -- --format)"
  complete_zsh cuoverlap analyze x --format '' | grep -qx -- '--format\[option\]:value:(text json markdown html)' ||
    fail "zsh: analyze --format"
  complete_zsh cuoverlap an | grep -q '^analyze:' || fail "zsh: the commands"
fi
[ -f "$p/share/zsh/vendor-completions/_cuoverlap" ] || fail "zsh completion missing"
[ -s "$p/share/doc/cuoverlap/README.md" ] && [ -s "$p/share/doc/cuoverlap/metrics.md" ] || fail "docs"
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" > cpack.log 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/cuoverlap_*.deb) || fail "no .deb written"
dpkg-deb -c "$deb" > "$work/deb.txt"
for f in ./usr/bin/cuoverlap ./usr/share/man/man1/cuoverlap-analyze.1 \
         ./usr/share/bash-completion/completions/cuoverlap ./usr/share/doc/cuoverlap/README.md; do
  grep -q " $f\$" "$work/deb.txt" || fail "$f not in $deb"
done
# The packaged binary is stripped (CPACK_STRIP_FILES): no symbol table, no debug sections, and it
# still runs; the build tree's binary keeps its debug information.
mkdir -p "$work/deb" && dpkg-deb -x "$deb" "$work/deb"
bin=$work/deb/usr/bin/cuoverlap
if command -v readelf >/dev/null; then
  sections=$(readelf -S -W "$bin")
  if echo "$sections" | grep -qE '\.symtab|\.debug_'; then fail "the packaged cuoverlap is not stripped"; fi
  for so in "$work"/deb/usr/lib/*.so; do
    [ -e "$so" ] || continue
    if readelf -S -W "$so" | grep -qE '\.symtab|\.debug_'; then fail "$(basename "$so") is not stripped"; fi
  done
  echo "packaged binary: $(stat -c %s "$bin") bytes, stripped"
fi
"$bin" --version | grep -qE '^[0-9]+\.[0-9]+' || fail "the packaged cuoverlap does not run"
dpkg-deb -f "$deb" Package Version Depends
echo "packaging ok: $(basename "$deb")"
