// tests/python/line_table_tool.cpp: the shim's line-table reader (shim/python_lines.cpp) on tables given
// on stdin, one code object a line: "KIND FIRSTLINE UNITS HEX" (KIND as in shim/python_layouts.h); prints,
// a line each, the line of every code unit 0..UNITS-1 as pyLineOf gives it. Driven by
// check_line_tables.py, which holds it against the interpreter's own mapping.
#include "shim/python_lines.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main()
{
    unsigned kind = 0;
    int firstLine = 0, units = 0;
    char hex[1 << 16];
    while (std::scanf("%u %d %d %65535s", &kind, &firstLine, &units, hex) == 4) {
        std::vector<uint8_t> table;
        const std::string h = hex[0] == '-' ? std::string() : std::string(hex);
        for (size_t i = 0; i + 1 < h.size(); i += 2) table.push_back(uint8_t(std::strtoul(h.substr(i, 2).c_str(), nullptr, 16)));
        for (int u = 0; u < units; ++u)
            std::printf(u ? " %d" : "%d", gpuspy::shim::pyLineOf(kind, table.data(), table.size(), firstLine, u));
        std::printf("\n");
    }
    return 0;
}
