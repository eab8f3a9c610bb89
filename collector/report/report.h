// collector/report/report.h: the renderers of a Report: text for people (findings first, nsys-stats-like
// tables, 100 columns), JSON for tools (schema "gpuspy.report/1", documented in the README) and CSV
// (one table per section). The JSON and the tables are shared with the exports and the viewer.
#pragma once

#include "collector/analyze/analyze.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace gpuspy::collect {

// The text report: width 0 is the default (100 columns); verbose adds every finding's raw evidence and the
// kernels' full names.
struct TextOptions {
    bool color = false;
    size_t width = 0;
    bool verbose = false;
};
std::string renderText(const Report&, const TextOptions&);
std::string renderJson(const Report&);  // reportJson(r).dump(2) plus a newline
std::string renderCsv(const Report&);

// The JSON document, for callers that embed it (the viewer) rather than print it.
nlohmann::ordered_json reportJson(const Report&);
// One entry of `clock_alignment` (a capture of several read as one run), as the report and the diff give it.
nlohmann::ordered_json clockAlignmentJson(const ClockAlignment&);

// The report's sections as flat tables of raw values (ns, bytes, plain numbers): what CSV prints.
struct Table {
    std::string name;  // processes, devices, apis, transfers, kernels, launches, syncs, nvtx, callsites, findings
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
};
std::vector<Table> reportTables(const Report&);

}  // namespace gpuspy::collect
