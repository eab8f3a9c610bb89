// collector/api_names.h: driver entry points named as users know them: the runtime call each one comes
// from, where that is unambiguous ("cuMemcpyHtoD_v2 (cudaMemcpy)").
#pragma once

#include <string>
#include <string_view>

namespace gpuspy::collect {

// The entry point without its ABI suffixes (_ptsz, _ptds, then _v2/_v3): "cuMemcpyHtoDAsync_v2_ptsz"
// -> "cuMemcpyHtoDAsync".
std::string_view driverBaseName(std::string_view abiName);

// The runtime call(s) that reach this entry point, or "" when there is none or it is ambiguous.
std::string_view runtimeNameOf(std::string_view abiName);

// "cuMemcpyHtoD_v2 (cudaMemcpy)", or the ABI name alone when runtimeNameOf is empty.
std::string displayName(std::string_view abiName);

}  // namespace gpuspy::collect
