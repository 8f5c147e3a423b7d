# MIG changes for the fake nvidia-smi (sourced; $G is the node's gpu directory). State:
# mig.mode.current/pending live in $G/query.csv (so --query-gpu shows them), GPU instances in
# $G/migstate/gi.N ("name profile_id gi_id start size"), compute instances in $G/migstate/ci.N ("gi_id").
# Messages follow nvidia-smi's wording; SYNTHETIC (no recording of these commands here).
S="$G/migstate"
mkdir -p "$S"

col() {  # col <gpu> <column> [<value>]: print the column of GPU <gpu>, or set it to <value>
  awk -F', ' -v OFS=', ' -v idx="$1" -v col="$2" -v val="${3-}" -v set="${3+1}" '
    NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*\]$/, "", h); if (h == col) c = i; if (h == "index") x = i }
              if (set) print; next }
    $x == idx && c { if (set) $c = val; else print $c }
    set { print }' "$G/query.csv" > "$G/query.csv.tmp" || return 1
  if [ -n "${3+1}" ]; then mv "$G/query.csv.tmp" "$G/query.csv"; else cat "$G/query.csv.tmp"; rm -f "$G/query.csv.tmp"; fi
}

known_gpu() {
  [ -n "$(col "$1" index)" ] || { echo "No devices were found matching the index $1"; exit 6; }
}

mig_mode() {  # mig_mode <gpu> -mig <0|1>  |  mig_mode <gpu> -r
  known_gpu "$1"
  bus=$(col "$1" pci.bus_id)
  case "$2" in
    -mig)
      if [ "$3" = 1 ]; then col "$1" mig.mode.pending Enabled; echo "Enabled MIG Mode for GPU $bus"
      else col "$1" mig.mode.pending Disabled; echo "Disabled MIG Mode for GPU $bus"; fi
      echo "All done.";;
    -r)
      pending=$(col "$1" mig.mode.pending)
      col "$1" mig.mode.current "$pending"
      [ "$pending" = Enabled ] || rm -f "$S/gi.$1" "$S/ci.$1"
      echo "GPU $bus was successfully reset."
      echo "All done.";;
  esac
}

mig_on() { [ "$(col "$1" mig.mode.current)" = Enabled ]; }

mig_op() {  # mig_op <gpu> -dci | -dgi | -cgi <list> [-C]
  known_gpu "$1"
  case "$2" in
    -dci)
      if [ ! -s "$S/ci.$1" ]; then echo "No compute instances found: Not Found"; return 6; fi
      while read -r gi; do echo "Successfully destroyed compute instance ID  0 from GPU  $1 GPU instance ID  $gi"; done < "$S/ci.$1"
      rm -f "$S/ci.$1";;
    -dgi)
      if [ -s "$S/ci.$1" ]; then
        echo "Unable to destroy GPU instance ID  $(head -n1 "$S/ci.$1") from GPU  $1: In use by another client"; return 19
      fi
      if [ ! -s "$S/gi.$1" ]; then echo "No GPU instances found: Not Found"; return 6; fi
      while read -r name pid gi start size; do echo "Successfully destroyed GPU instance ID  $gi from GPU  $1"; done < "$S/gi.$1"
      rm -f "$S/gi.$1";;
    -cgi)
      if ! mig_on "$1"; then echo "Unable to create a GPU instance on GPU  $1: MIG mode is not enabled (Not Supported)"; return 6; fi
      if [ -e "$F/mig-fail" ] && [ "$1" = 3 ]; then
        echo "Unable to create a GPU instance on GPU  $1 using profile ${3%%,*}: Insufficient Resources"; return 2
      fi
      used=0; next=1
      if [ -s "$S/gi.$1" ]; then
        used=$(awk '{ s += $5 } END { print s + 0 }' "$S/gi.$1"); next=$(awk '{ if ($3 >= m) m = $3 } END { print m + 1 }' "$S/gi.$1")
      fi
      for want in $(echo "$3" | tr ',' ' '); do
        row=$(awk -v g="$1" -v w="$want" '$1 == "|" && $2 == g && $3 == "MIG" && ($4 == w || $5 == w) { print $4, $5; exit }' "$G/lgip.txt")
        if [ -z "$row" ]; then echo "Unable to create a GPU instance on GPU  $1 using profile $want: Invalid Argument"; return 2; fi
        set -- "$1" "$2" "$3" $row
        name=$4; pid=$5; size=${name%%g.*}
        if [ $((used + size)) -gt 7 ]; then
          echo "Unable to create a GPU instance on GPU  $1 using profile $pid: Insufficient Resources"; return 2
        fi
        echo "$name $pid $next $used $size" >> "$S/gi.$1"
        echo "Successfully created GPU instance ID  $next on GPU  $1 using profile MIG $name (ID $pid)"
        if [ "$CREATE_CI" = 1 ]; then
          echo "$next" >> "$S/ci.$1"
          echo "Successfully created compute instance ID  0 on GPU  $1 GPU instance ID  $next using profile MIG $name (ID  0)"
        fi
        used=$((used + size)); next=$((next + 1))
      done;;
    *) echo "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."; return 2;;
  esac
}

mig_lgi() {
  set -- "$S"/gi.*
  [ -e "$1" ] || { echo "No GPU instances found: Not Found"; return 6; }
  echo "+-------------------------------------------------------+"
  echo "| GPU instances:                                        |"
  echo "| GPU   Name             Profile  Instance   Placement  |"
  echo "|                           ID       ID       Start:Size |"
  echo "|=======================================================|"
  for f in "$@"; do
    g=${f##*.}
    while read -r name pid gi start size; do
      printf '|   %s  MIG %-13s%5s%10s%12s     |\n' "$g" "$name" "$pid" "$gi" "$start:$size"
      echo "+-------------------------------------------------------+"
    done < "$f"
  done
}

mig_lci() {
  set -- "$S"/ci.*
  [ -e "$1" ] || { echo "No compute instances found: Not Found"; return 6; }
  echo "+--------------------------------------------------------------------+"
  echo "| Compute instances:                                                 |"
  echo "| GPU     GPU       Name             Profile   Instance   Placement  |"
  echo "|       Instance                       ID        ID       Start:Size |"
  echo "|         ID                                                         |"
  echo "|====================================================================|"
  for f in "$@"; do
    g=${f##*.}
    while read -r gi; do
      row=$(awk -v gi="$gi" '$3 == gi { print $1, $5; exit }' "$S/gi.$g")
      set -- $row
      printf '|   %s%7s       MIG %-16s%3s%10s%12s     |\n' "$g" "$gi" "$1" 0 0 "0:$2"
      echo "+--------------------------------------------------------------------+"
    done < "$f"
  done
}
