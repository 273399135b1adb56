#!/usr/bin/env bash
# Writes a man page per command from the binary's own --help (so the pages never drift from the
# options), with its EXAMPLES, EXIT STATUS and ENVIRONMENT sections from the headings --help ends
# with: make_man.sh CUOVERLAP OUT_DIR VERSION
set -euo pipefail
bin=$1 out=$2 version=$3
rm -rf "$out" && mkdir -p "$out"
escape() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\&'/"; }
page() {  # page NAME TITLE HELP_COMMAND...
  local name=$1 title=$2; shift 2
  {
    printf '.TH %s 1 "" "cuoverlap %s" "User Commands"\n' "$(echo "$name" | tr a-z A-Z)" "$version"
    printf '.SH NAME\n%s \\- %s\n' "$name" "$title"
    printf '.SH SYNOPSIS\n.nf\n'
    "$@" --help | grep -m1 -E '^Usage:' | sed 's/^Usage: //' | escape
    printf '.fi\n.SH OPTIONS\n.nf\n'
    # The sections --help ends with (cli/help_sections.h) become the page's own.
    "$@" --help | sed '1,/^$/d' | escape | awk '
      /^(Examples|Exit status|Environment):$/ { sub(/:$/, ""); printf ".fi\n.SH %s\n.nf\n", toupper($0); next }
      { print }'
    printf '.fi\n.SH SEE ALSO\n'
    printf 'cuoverlap(1); /usr/share/doc/cuoverlap/ (README.md, docs/*.md)\n'
  } > "$out/$name.1"
}
page cuoverlap "do your CUDA copies and kernels really overlap, and why not?" "$bin"
commands=$("$bin" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF')
for cmd in $(echo "$commands" | awk '{print $1}'); do
  title=$(echo "$commands" | awk -v c="$cmd" '$1 == c {$1 = ""; sub(/^ +/, ""); print}')
  page "cuoverlap-$cmd" "${title:-cuoverlap $cmd}" "$bin" "$cmd"
done
