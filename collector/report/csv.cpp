// collector/report/csv.cpp: the report as CSV: per table of reportTables() a "# name" line, a header
// row, the rows, and a blank line (RFC 4180 quoting).
#include "collector/report/report.h"

namespace gpuspy::collect {

namespace {

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string o = "\"";
    for (char c : s) {
        if (c == '"') o += '"';
        o += c;
    }
    return o + "\"";
}

}  // namespace

std::string renderCsv(const Report& r)
{
    std::string out;
    for (const Table& t : reportTables(r)) {
        out += "# " + t.name + "\n";
        for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + csvField(t.columns[i]);
        out += "\n";
        for (const auto& row : t.rows) {
            for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csvField(row[i]);
            out += "\n";
        }
        out += "\n";
    }
    return out;
}

}  // namespace gpuspy::collect
