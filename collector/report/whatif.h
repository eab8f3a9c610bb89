// collector/report/whatif.h: `gpuspy whatif` as text and as JSON (schema "gpuspy.whatif/1"): per process, the
// replay unchanged against the measured wall, the critical path, and each fix's prediction.
#pragma once

#include "collector/replay/whatif.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace gpuspy::collect {

std::string renderWhatIfText(const std::vector<replay::WhatIf>& all);
nlohmann::ordered_json whatIfJson(const std::vector<replay::WhatIf>& all);

}  // namespace gpuspy::collect
