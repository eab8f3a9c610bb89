// collector/export/viewer_json.h: the data of `gpuspy view`: the report JSON and a timeline section
// (every call, GPU span and NVTX range by track, in compact columns), as documented in viewer/README.md.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/model/model.h"

#include <string>
#include <string_view>

namespace gpuspy::collect {

// The "gpuspy.timeline/2" document.
std::string exportTimelineJson(const Capture& capture);

// The viewer's whole document, "gpuspy.view/1": {schema, source, report, timeline}. Every '<' is
// written as \u003c, so the text can be placed inside an HTML <script> element as it is.
std::string exportViewerData(const Capture& capture, const Report& report, std::string_view source);

}  // namespace gpuspy::collect
