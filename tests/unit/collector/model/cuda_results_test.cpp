// tests/unit/collector/model/cuda_results_test.cpp: CUDA's result codes by the names cuda.h gives them.
#include "collector/model/cuda_results.h"

#include <gtest/gtest.h>

namespace gpuspy::collect {
namespace {

TEST(CudaResults, NamedAsCudaHSpellsThem)
{
    // The values cuda.h gives them (the CUresult ABI does not change between versions).
    EXPECT_EQ(cudaResultName(209), "CUDA_ERROR_NO_BINARY_FOR_GPU");
    EXPECT_EQ(cudaResultName(2), "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_EQ(cudaResultName(201), "CUDA_ERROR_INVALID_CONTEXT");
    EXPECT_EQ(cudaResultName(0), "CUDA_SUCCESS");
    EXPECT_EQ(cudaResultName(123456), "CUresult 123456");
}

}  // namespace
}  // namespace gpuspy::collect
