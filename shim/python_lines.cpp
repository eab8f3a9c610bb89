// shim/python_lines.cpp: CPython's line tables, the three forms since 3.9, read as the interpreter reads
// them (PyCode_Addr2Line of each version).
#include "shim/python_lines.h"

#include "shim/python_layouts.h"

namespace gpuspy::shim {

namespace {

// The 3.11+ location table (Objects/locations.md): entries of 1-8 code units, each opening with a byte
// 1ccccnnn (code, units - 1); the line moves by a delta per entry (code 15: no line). The line of
// code unit lasti; -1 where the table says none or ends first.
uint32_t readVarint(const uint8_t*& p, const uint8_t* end)
{
    uint32_t v = 0, shift = 0;
    while (p < end) {
        const uint8_t b = *p++;
        v |= uint32_t(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 24) break;
    }
    return v;
}

int32_t lineOfLocations(const uint8_t* p, const uint8_t* end, int32_t firstLine, int32_t lasti)
{
    int32_t line = firstLine, unit = 0;
    while (p < end) {
        const uint8_t head = *p++;
        const uint32_t code = (head >> 3) & 15;
        const int32_t units = (head & 7) + 1;
        int32_t delta = 0;
        if (code == 14 || code == 13) {
            const uint32_t v = readVarint(p, end);
            delta = (v & 1) ? -int32_t(v >> 1) : int32_t(v >> 1);
        } else if (code >= 10 && code <= 12) {
            delta = int32_t(code) - 10;
        }
        line += delta;
        if (lasti < unit + units) return code == 15 ? -1 : line;
        unit += units;
        while (p < end && !(*p & 0x80)) ++p;  // the entry's columns
    }
    return -1;
}

// The (byte delta, signed line delta) pair tables, over byte offsets: 3.9's co_lnotab (a line holds
// from its pair's address to the next pair's: Objects/lnotab_notes.txt) and 3.10's co_linetable (each
// pair one range of bytes; delta -128: no line). The line of byte offset addr, -1 where none.
int32_t lineOfPairs(const uint8_t* p, const uint8_t* end, int32_t firstLine, int64_t addr, bool lnotab)
{
    int32_t line = firstLine;
    int64_t start = 0, stop = 0;
    for (; p + 1 < end; p += 2) {
        const int32_t delta = int8_t(p[1]);
        if (lnotab) {
            stop += p[0];
            if (stop > addr) return line;
            line += delta;
            continue;
        }
        start = stop;
        stop += p[0];
        if (delta != -128) line += delta;
        if (addr >= start && addr < stop) return delta == -128 ? -1 : line;
    }
    return lnotab ? line : -1;
}

}  // namespace

int32_t pyLineOf(uint32_t kind, const uint8_t* table, uint64_t size, int32_t firstLine, int32_t lasti)
{
    if (lasti < 0) return firstLine;
    if (kind == GPUSPY_PY_LOCATIONS) return lineOfLocations(table, table + size, firstLine, lasti);
    return lineOfPairs(table, table + size, firstLine, int64_t(lasti) * 2, kind == GPUSPY_PY_LNOTAB);
}

}  // namespace gpuspy::shim
