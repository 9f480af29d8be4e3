# Sourced by the device scripts (stack.sh, fabric-doctor.sh), not run: the two ways they
# record one command under "$out", each bounded by a timeout and ending in "exit=N".

# name, timeout (s), command...: stdout+stderr into NAME.txt
text() {
  local name=$1 t=$2; shift 2
  echo "== $name: $*" >&2
  { echo "\$ $*"; timeout -s KILL "$t" "$@"; echo "exit=$?"; } > "$out/$name.txt" 2>&1
}
# name, timeout (s), command...: stdout (JSON) into NAME.json, stderr into NAME.err
json() {
  local name=$1 t=$2; shift 2
  echo "== $name: $*" >&2
  { echo "\$ $*"; timeout -s KILL "$t" "$@" > "$out/$name.json"; echo "exit=$?"; } 2> "$out/$name.err" >&2
}
