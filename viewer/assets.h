// viewer/assets.h: the viewer's files (index.html, viewer.js, lanes.js, viewer.css), embedded into the program
// at build time by viewer/CMakeLists.txt, so that `gpuspy view` writes a page with no other file.
#pragma once

#include <string_view>

namespace gpuspy::viewer {

// The contents of viewer/<name>, or an empty view if there is no such file.
std::string_view asset(std::string_view name);

}  // namespace gpuspy::viewer
