// tests/unit/collector/model/library_code_test.cpp: which frames are a library's though they sit in the
// user's binary or script (the toolkit's headers, installed Python packages), and the call named after
// them (issue 28).
#include "collector/model/api_names.h"
#include "collector/model/library_code.h"

#include <gtest/gtest.h>

namespace gpuspy::collect {
namespace {

TEST(LibraryCode, ToolkitHeadersByTheirFile)
{
    EXPECT_TRUE(isToolkitHeaderCode("/usr/local/cuda-13.0/include/cccl/cub/util_device.cuh", "f"));
    EXPECT_TRUE(isToolkitHeaderCode("/usr/local/cuda/targets/x86_64-linux/include/thrust/sort.h", "f"));
    EXPECT_TRUE(isToolkitHeaderCode("/usr/local/cuda/bin/../targets/x86_64-linux/include/cooperative_groups.h", "f"));
    EXPECT_TRUE(isToolkitHeaderCode("/usr/local/cuda-12.4/include/vector_functions.hpp", "f"));
    EXPECT_TRUE(isToolkitHeaderCode("/usr/include/thrust/device_vector.h", "f"));  // Debian's toolkit
    EXPECT_TRUE(isToolkitHeaderCode("/opt/cccl/cub/cub/device/device_radix_sort.cuh", "f"));  // CCCL from source
    // The user's own files, even in a folder named like the toolkit's.
    EXPECT_FALSE(isToolkitHeaderCode("/home/u/cuda-project/include/kernels.h", "f"));
    EXPECT_FALSE(isToolkitHeaderCode("/home/u/app/src/sort.cu", "cub::CUB_300001_SM_750::DeviceRadixSort::SortKeys"));
}

TEST(LibraryCode, ToolkitHeadersWithoutLineInformationByTheirNamespaces)
{
    EXPECT_TRUE(isToolkitHeaderCode("", "cudaError cub::CUB_300001_SM_750::DeviceRadixSort::SortKeys<int>(void*)"));
    EXPECT_TRUE(isToolkitHeaderCode("", "thrust::THRUST_300001_SM_750_NS::device_vector<int>::device_vector(unsigned long)"));
    // Only a template argument of CCCL's: the user's function.
    EXPECT_FALSE(isToolkitHeaderCode("", "void run<thrust::THRUST_300001_SM_750_NS::device_vector<int> >(int)"));
    EXPECT_FALSE(isToolkitHeaderCode("", "main"));
}

TEST(LibraryCode, TheCallTheUserWroteIntoTheHeaders)
{
    EXPECT_EQ(toolkitCallOf("/usr/local/cuda-13.0/include/cccl/cub/device/device_radix_sort.cuh",
                            "cudaError cub::CUB_300001_SM_750::DeviceRadixSort::SortKeys<int, int>(void*, unsigned long&, int const*, "
                            "int*, int, int, int, CUstream_st*)"),
              "cub::DeviceRadixSort::SortKeys (CUB)");
    EXPECT_EQ(toolkitCallOf("/usr/local/cuda-13.0/include/cccl/thrust/detail/vector_base.inl",
                            "thrust::THRUST_300001_SM_750_NS::device_vector<int, thrust::THRUST_300001_SM_750_NS::"
                            "device_allocator<int> >::device_vector(unsigned long, int const&)"),
              "thrust::device_vector::device_vector (thrust)");
    EXPECT_EQ(toolkitCallOf("/usr/local/cuda-13.0/include/cccl/cuda/std/__algorithm/copy.h", "void cuda::std::__4::copy<int*>(int*)"),
              "cuda::std::copy (libcu++)");
    // The runtime's own inline wrappers are named by the CUDA call already.
    EXPECT_EQ(toolkitCallOf("/usr/local/cuda/targets/x86_64-linux/include/cuda_runtime.h", "cudaFuncGetAttributes<void>"), "");
    EXPECT_EQ(toolkitCallOf("/home/u/app.cu", "main"), "");
}

TEST(LibraryCode, InstalledPythonIsNotTheUsersCode)
{
    EXPECT_TRUE(isInstalledPython("/usr/lib/python3/dist-packages/numba/cuda/cudadrv/driver.py"));
    EXPECT_TRUE(isInstalledPython("/home/u/venv/lib/python3.11/site-packages/cupy/_core/core.py"));
    EXPECT_TRUE(isInstalledPython("/usr/lib/python3.11/threading.py"));
    EXPECT_TRUE(isInstalledPython("<frozen importlib._bootstrap>"));
    EXPECT_FALSE(isInstalledPython("/home/u/serve.py"));
    EXPECT_FALSE(isInstalledPython("<stdin>"));
    EXPECT_FALSE(isInstalledPython(""));
}

TEST(LibraryCode, NcclAliasesByThePublicName)
{
    EXPECT_EQ(libraryCallOf("/usr/lib/libnccl.so.2", "pncclAllReduce"), "ncclAllReduce (libnccl.so.2)");
    EXPECT_EQ(libraryCallOf("", "pncclGroupEnd"), "ncclGroupEnd (NCCL, linked in)");
}

}  // namespace
}  // namespace gpuspy::collect
