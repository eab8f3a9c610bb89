#!/usr/bin/env bash
# tests/collector/check.sh: runs a command and checks its exit status and output.
# usage: check.sh STATUS [--stdout REGEX] [--stderr REGEX] [--no-stdout REGEX] [--lines-stderr N] -- CMD [ARGS...]
# STATUS is the exact exit status expected, or "nonzero".
set -u
want=$1; shift
out_re=(); err_re=(); no_out_re=(); err_lines=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --stdout) out_re+=("$2"); shift 2 ;;
    --stderr) err_re+=("$2"); shift 2 ;;
    --no-stdout) no_out_re+=("$2"); shift 2 ;;
    --lines-stderr) err_lines=$2; shift 2 ;;
    *) echo "check.sh: bad option $1" >&2; exit 2 ;;
  esac
done
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err" </dev/null
rc=$?
fail=0
if [ "$want" = nonzero ]; then
  [ "$rc" -ne 0 ] || { echo "expected a non-zero exit status, got 0"; fail=1; }
else
  [ "$rc" -eq "$want" ] || { echo "expected exit status $want, got $rc"; fail=1; }
fi
for re in "${out_re[@]+"${out_re[@]}"}"; do
  grep -Eq -- "$re" "$tmp/out" || { echo "stdout does not match: $re"; fail=1; }
done
for re in "${no_out_re[@]+"${no_out_re[@]}"}"; do
  ! grep -Eq -- "$re" "$tmp/out" || { echo "stdout matches what it must not: $re"; fail=1; }
done
for re in "${err_re[@]+"${err_re[@]}"}"; do
  grep -Eq -- "$re" "$tmp/err" || { echo "stderr does not match: $re"; fail=1; }
done
if [ -n "$err_lines" ]; then
  n=$(wc -l <"$tmp/err")
  [ "$n" -eq "$err_lines" ] || { echo "expected $err_lines line(s) on stderr, got $n"; fail=1; }
fi
if [ $fail -ne 0 ]; then
  echo "--- command: $*"; echo "--- stdout:"; head -c 4000 "$tmp/out"; echo "--- stderr:"; head -c 4000 "$tmp/err"
fi
exit $fail
