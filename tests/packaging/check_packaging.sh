#!/usr/bin/env bash
# check_packaging.sh BUILD_DIR WORK_DIR: `cmake --install` into a prefix and `cpack -G DEB`, then
# checks what a user gets: the command runs from the prefix, a man page per command with its
# options, shell completions that parse, docs, and a .deb that holds the same files.
set -euo pipefail
build=$(cd "$1" && pwd) work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
p=$work/prefix
"$p/bin/cuoverlap" --version | grep -qE '^[0-9]+\.[0-9]+' || fail "installed cuoverlap --version"
for page in cuoverlap cuoverlap-analyze cuoverlap-gate cuoverlap-export cuoverlap-diff; do
  f=$p/share/man/man1/$page.1
  [ -s "$f" ] || fail "missing man page $page.1"
  grep -q '^.SH OPTIONS' "$f" || fail "$page.1 has no OPTIONS section"
done
grep -q -- '--format' "$p/share/man/man1/cuoverlap-analyze.1" || fail "analyze page lacks --format"
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$p/share/man/man1/cuoverlap-analyze.1" 2>"$work/groff.log" || fail "groff"
  [ ! -s "$work/groff.log" ] || { cat "$work/groff.log"; fail "groff warnings"; }
fi
bash -n "$p/share/bash-completion/completions/cuoverlap" || fail "bash completion syntax"
# The bash completion offers the subcommands and an option read from --help.
out=$(PATH=$p/bin:$PATH bash -c "source $p/share/bash-completion/completions/cuoverlap;
  COMP_WORDS=(cuoverlap an); COMP_CWORD=1; _cuoverlap; echo \${COMPREPLY[*]};
  COMP_WORDS=(cuoverlap gate --min-o); COMP_CWORD=2; _cuoverlap; echo \${COMPREPLY[*]}")
echo "$out" | head -1 | grep -qx analyze || fail "bash completion of 'an': $out"
echo "$out" | tail -1 | grep -q -- '--min-overlap' || fail "bash completion of gate options: $out"
if command -v zsh >/dev/null; then zsh -n "$p/share/zsh/vendor-completions/_cuoverlap" || fail "zsh syntax"; fi
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
