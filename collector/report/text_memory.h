// collector/report/text_memory.h: the text report's GPU memory section.
#pragma once

#include "collector/report/text_parts.h"

#include <string>

namespace gpuspy::collect {

void memorySection(std::string& out, const Report& r, const textparts::Style& st);

}  // namespace gpuspy::collect
