// collector/model/cuda_results.cpp: see cuda_results.h. The table is generated from the toolkit's cuda.h
// when configuring (collector/CMakeLists.txt).
#include "collector/model/cuda_results.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace gpuspy::collect {

namespace {

struct Named {
    int32_t code;
    const char* name;
};
constexpr Named kResults[] = {
#include "cuda_results.inc"
};

}  // namespace

std::string cudaResultName(int32_t code)
{
    for (const Named& n : kResults)
        if (n.code == code) return n.name;
    return "CUresult " + std::to_string(code);
}

int32_t cudaResultCode(const std::string& name)
{
    for (const Named& n : kResults)
        if (name == n.name) return n.code;
    return -1;
}

}  // namespace gpuspy::collect
