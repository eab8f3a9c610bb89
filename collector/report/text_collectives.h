// collector/report/text_collectives.h: the text report's NCCL section.
#pragma once

#include "collector/analyze/analyze.h"
#include "collector/report/text_parts.h"

#include <string>

namespace gpuspy::collect {

void collectivesSection(std::string& out, const Report& r, const textparts::Style& st);

}  // namespace gpuspy::collect
