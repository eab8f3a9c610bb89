# tests/collector/script_checks.sh: sourced by the end-to-end CLI test scripts (diff_test.sh,
# repeat_test.sh, repeat_select_test.sh): a scratch directory to work in, removed at exit, and the checks
# they share. A failed check is said with FAIL and counted in $fail; the script exits with it.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# expect STATUS CMD...: runs CMD into out/err and checks its exit status.
expect() {
    local want=$1; shift
    "$@" >out 2>err
    local rc=$?
    [ "$rc" -eq "$want" ] || { bad "exit $rc, not $want: $*"; sed 's/^/  | /' err out | head -30; }
}
# has FILE REGEX / lacks FILE REGEX: the file matches the extended regex, or does not.
has() { grep -Eq -- "$2" "$1" || { bad "$1 lacks /$2/"; sed 's/^/  | /' "$1" | head -80; }; }
lacks() { ! grep -Eq -- "$2" "$1" || { bad "$1 has /$2/"; grep -E -- "$2" "$1" | head -5 | sed 's/^/  | /'; }; }
