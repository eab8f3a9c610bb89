# tests/report/same_stdout.sh: sourced by the report tests. same_stdout TAG PLAIN RECORDED: the program's
# stdout without gpuspy (PLAIN) must come first, unchanged, in what `gpuspy record` printed (RECORDED),
# before gpuspy's own text report; says why not (TAG: the script's name) and returns 1 otherwise.
same_stdout() {
    local tag=$1 plain=$2 recorded=$3 size
    size=$(stat -c %s "$plain")
    if ! cmp -s -n "$size" "$plain" "$recorded"; then
        echo "$tag: FAIL: the program's stdout under gpuspy differs from its stdout without it" >&2
        diff <(cat "$plain") <(head -c "$size" "$recorded") | head -20 >&2
        return 1
    fi
}
