# bash completion for cuoverlap. Commands, options and the values an option takes are read from
# `cuoverlap [COMMAND] --help`, so they always match the installed binary: each command offers
# only its own (`export --format` offers perfetto and kineto, `analyze --format` text, json,
# markdown and html).
_cuoverlap() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]} bin=${COMP_WORDS[0]}
  local commands
  commands="$("$bin" --help 2>/dev/null | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}') help"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  if [ "$cmd" = help ]; then
    COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    return
  fi
  if [ "$cmd" = record ]; then
    local i
    for ((i = 2; i < COMP_CWORD; i++)); do
      if [ "${COMP_WORDS[i]}" = "--" ]; then  # the traced program and its arguments
        COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
        return
      fi
    done
  fi
  if [[ $cur == -* ]]; then
    local options
    options=$("$bin" "$cmd" --help 2>/dev/null |
              grep -oE '^[[:space:]]+(-[[:alnum:]],)?--[[:alnum:]-]+' | grep -oE -- '--[[:alnum:]-]+')
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi
  local prev=${COMP_WORDS[COMP_CWORD - 1]}
  if [[ $prev == -* ]]; then
    # The choices on the option's --help line: "  --format TEXT:{text,json,markdown,html} [text]".
    local values
    values=$("$bin" "$cmd" --help 2>/dev/null |
             grep -E -- "^[[:space:]]+(-[[:alnum:]], *)?(--[[:alnum:]-]+, *)?$prev[[:space:]]" |
             grep -oE '\{[^}]*\}' | head -1 | tr -d '{}' | tr ',' ' ')
    if [ -n "$values" ]; then
      COMPREPLY=($(compgen -W "$values" -- "$cur"))
      return
    fi
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _cuoverlap cuoverlap
