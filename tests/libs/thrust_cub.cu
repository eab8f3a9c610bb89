// thrust_cub: thrust sort/reduce/scan and a CUB device reduce, built at nvcc's default arch (no -arch), as a
// program built without thinking about the GPU is. Its fatbin then holds only SASS and PTX for an older arch,
// which a CC 9.0 driver JIT-compiles from the PTX: CUB checks the PTX version each kernel reports. Two CUB
// radix sorts from two lines of main: each is its own call site, named by its line (issue 28). Then a CUB
// segmented reduce: kSegments sums over equal segments given by an offsets array.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>

#include "lib_common.h"

constexpr int kItems = 4096;
constexpr int kSegments = 16;

__global__ void touch(int* p)
{
    if (p) *p = 0;
}

int main()
{
    // What a CC 9.0 driver reports for a kernel of this binary: built for nvcc's default arch alone (sm_75 SASS +
    // compute_75 PTX), it runs JIT-compiled from the PTX: PTX version 75, binary version 90.
    cudaFuncAttributes attr;
    CK(cudaFuncGetAttributes(&attr, touch));
    std::printf("touch: PTX version %d, binary version %d\n", attr.ptxVersion, attr.binaryVersion);
#if __CUDA_ARCH_LIST__ == 750
    int major = 0, minor = 0;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    CK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
    if (major * 10 + minor == 90 && (attr.ptxVersion != 75 || attr.binaryVersion != 90)) {
        std::fprintf(stderr, "expected PTX version 75 and binary version 90 on a CC 9.0 device\n");
        return 1;
    }
#endif
    thrust::device_vector<int> v(kItems, 1);
    thrust::sort(v.begin(), v.end());
    std::printf("thrust::sort of %d ints: done\n", kItems);
    const int sum = thrust::reduce(v.begin(), v.end());
    (void)sum;  // kernels do not run on the simulated driver: the value is not checked
    std::printf("thrust::reduce: done\n");
    thrust::inclusive_scan(v.begin(), v.end(), v.begin());
    std::printf("thrust::inclusive_scan: done\n");

    int* out;
    CK(cudaMalloc(&out, sizeof(int)));
    size_t scratchBytes = 0;
    CK(cub::DeviceReduce::Sum(nullptr, scratchBytes, thrust::raw_pointer_cast(v.data()), out, kItems));
    void* scratch;
    CK(cudaMalloc(&scratch, scratchBytes));
    CK(cub::DeviceReduce::Sum(scratch, scratchBytes, thrust::raw_pointer_cast(v.data()), out, kItems));
    CK(cudaDeviceSynchronize());
    std::printf("cub::DeviceReduce::Sum: done\n");
    int* keys = thrust::raw_pointer_cast(v.data());
    int* sorted;
    CK(cudaMalloc(&sorted, kItems * sizeof(int)));
    size_t sortBytes = 0;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, sortBytes, keys, sorted, kItems));
    void* sortScratch;
    CK(cudaMalloc(&sortScratch, sortBytes));
    CK(cub::DeviceRadixSort::SortKeys(sortScratch, sortBytes, keys, sorted, kItems));
    CK(cub::DeviceRadixSort::SortKeys(sortScratch, sortBytes, sorted, keys, kItems));
    CK(cudaDeviceSynchronize());
    std::printf("cub::DeviceRadixSort::SortKeys twice: done\n");
    int offsets[kSegments + 1];
    for (int i = 0; i <= kSegments; ++i) offsets[i] = i * (kItems / kSegments);
    int *dOffsets, *sums;
    CK(cudaMalloc(&dOffsets, sizeof offsets));
    CK(cudaMalloc(&sums, kSegments * sizeof(int)));
    CK(cudaMemcpy(dOffsets, offsets, sizeof offsets, cudaMemcpyHostToDevice));
    size_t segBytes = 0;
    CK(cub::DeviceSegmentedReduce::Sum(nullptr, segBytes, keys, sums, kSegments, dOffsets, dOffsets + 1));
    void* segScratch;
    CK(cudaMalloc(&segScratch, segBytes > 0 ? segBytes : 1));
    CK(cub::DeviceSegmentedReduce::Sum(segScratch, segBytes, keys, sums, kSegments, dOffsets, dOffsets + 1));
    CK(cudaDeviceSynchronize());
    std::printf("cub::DeviceSegmentedReduce::Sum over %d segments: done\n", kSegments);
    CK(cudaFree(segScratch));
    CK(cudaFree(sums));
    CK(cudaFree(dOffsets));
    CK(cudaFree(sortScratch));
    CK(cudaFree(sorted));
    CK(cudaFree(scratch));
    CK(cudaFree(out));
    return 0;
}
