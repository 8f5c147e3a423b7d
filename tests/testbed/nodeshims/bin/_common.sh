# Sourced by every shim: the node directory of the dialled node, and its faults.
N="${HPCTUI_SHIM_ROOT:?HPCTUI_SHIM_ROOT not set}/nodes/${HPCTUI_SHIM_NODE:-_default}"
[ -d "$N" ] || N="$HPCTUI_SHIM_ROOT/nodes/_default"
F="$N/faults"
HANG_S="${HPCTUI_SHIM_HANG_S:-30}"
real() {  # real <tool>: the system binary, skipping this shim directory
  for _d in /usr/bin /bin /usr/sbin /sbin; do [ -x "$_d/$1" ] && { echo "$_d/$1"; return 0; }; done
  return 1
}
listed() {  # listed <file> <line>: is <line> one of the lines of <file>?
  [ -r "$1" ] || return 1
  while IFS= read -r _l; do [ "$_l" = "$2" ] && return 0; done < "$1"
  return 1
}
