// shim/python_lines.h: a CPython code object's line table read as the interpreter reads it: the line
// of one instruction. Pure functions over the table's bytes (shim/python.cpp hands them a checked bytes
// object's data; tests/python/line_table_tool.cpp the tables tests/python/check_line_tables.py dumps).
#pragma once

#include <cstdint>

namespace gpuspy::shim {

// The line of code unit lasti (2-byte units from the code's first instruction) in a table of kind
// (GpuspyPyLines: GPUSPY_PY_LNOTAB, _LINETABLE or _LOCATIONS, shim/python_layouts.h); the first line for
// lasti < 0; -1 where the table gives the unit no line or ends before it.
int32_t pyLineOf(uint32_t kind, const uint8_t* table, uint64_t size, int32_t firstLine, int32_t lasti);

}  // namespace gpuspy::shim
