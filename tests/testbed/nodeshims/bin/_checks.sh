# Sourced by the check shims (dcgmi, all_reduce_perf, mpirun, nhc): the node is $HPCTUI_SHIM_NODE, else
# the dialled address of $SSH_CONNECTION (what sshd sets), like the probe's own shim setup.
if [ -z "${HPCTUI_SHIM_NODE:-}" ] && [ -n "${SSH_CONNECTION:-}" ]; then
  HPCTUI_SHIM_NODE=$(printf '%s\n' "$SSH_CONNECTION" | awk '{ print $3 }')
fi
. "${0%/*}/_common.sh"
C="$N/checks"
SAMPLES="${HPCTUI_CHECK_SAMPLES:-${0%/*}/../checks}"
# answer <name> <default sample>: print the node's recorded output for <name> (or the default
# recording) and exit with its recorded status ($C/<name>.rc, else 0); $C/<name>.hang: never answers
answer() {
  [ -e "$C/$1.hang" ] && exec sleep "$HANG_S"
  if [ -r "$C/$1.out" ]; then cat "$C/$1.out"; else cat "$SAMPLES/$2"; fi
  rc=0; [ -r "$C/$1.rc" ] && rc=$(cat "$C/$1.rc")
  exit "$rc"
}
