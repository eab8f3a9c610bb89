// collector/model/cuda_results.h: CUDA's result codes by name, as cuda.h spells them.
#pragma once

#include <cstdint>
#include <string>

namespace gpuspy::collect {

// "CUDA_ERROR_NO_BINARY_FOR_GPU" for 209; "CUresult 12345" for a code this toolkit's cuda.h does not name.
std::string cudaResultName(int32_t code);

// The code of a name cudaResultName gives: 209 for "CUDA_ERROR_NO_BINARY_FOR_GPU"; -1 for any other.
int32_t cudaResultCode(const std::string& name);

}  // namespace gpuspy::collect
