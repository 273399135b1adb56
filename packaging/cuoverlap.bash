# bash completion for cuoverlap. Options are read from `cuoverlap COMMAND --help`, so they always
# match the installed binary.
_cuoverlap() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
  local commands="analyze gate export diff record ranges summarize help"
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
    options=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null |
              grep -oE '^[[:space:]]+(-[[:alnum:]],)?--[[:alnum:]-]+' | grep -oE -- '--[[:alnum:]-]+')
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi
  case ${COMP_WORDS[COMP_CWORD - 1]} in
    --format) COMPREPLY=($(compgen -W "text json markdown html perfetto kineto" -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    --scope) COMPREPLY=($(compgen -W "auto steady whole" -- "$cur")); return ;;
  esac
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _cuoverlap cuoverlap
