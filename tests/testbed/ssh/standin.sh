#!/bin/sh
# A stand-in streaming probe for transport tests: one "@@REC <address> <seq> <pid>" line per
# interval, with the node-side faults of the bed (by the dialled address, $SSH_CONNECTION's 3rd field).
interval=${1:-0.2}
set -- $SSH_CONNECTION
addr=$3
fault=$(awk -v a="$addr" '$1 == a { print $2 }' "${HPCTUI_BED_FAULTS:-/dev/null}" 2>/dev/null)
seq=0
case "$fault" in
  hang) exec sleep 3600 ;;  # a probe that never prints: the client must restart it
esac
while :; do
  seq=$((seq + 1))
  case "$fault" in
    garbage) printf '\033]0;pwn\007\377\376\000junk no newline'; printf '\n@@REC %s %s %s\n' "$addr" "$seq" "$$" ;;
    cut) printf '@@REC %s %s' "$addr" "$seq"; exit 0 ;;  # a record cut mid-way, then the stream ends
    dies) printf '@@REC %s %s %s\n' "$addr" "$seq" "$$"; [ "$seq" -ge 2 ] && exit 3 ;;
    *) printf '@@REC %s %s %s\n' "$addr" "$seq" "$$" ;;
  esac
  sleep "$interval"
done
