// nvrtc_kernel: compiles a kernel at run time with NVRTC (to PTX for compute_75, as a JIT-ing framework that
// targets the oldest supported arch does), loads it with the driver API and launches it.
#include <cuda.h>
#include <nvrtc.h>

#include <string>

#include "lib_common.h"

#define CK_CU(call) CK_STATUS(call)

constexpr int kItems = 1 << 16;
constexpr int kBlock = 256;
constexpr long kBytes = kItems * sizeof(float);

const char* kSource = R"(
extern "C" __global__ void scale(float* v, float by, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= by;
}
)";

int main()
{
    nvrtcProgram prog;
    CK_STATUS(nvrtcCreateProgram(&prog, kSource, "scale.cu", 0, nullptr, nullptr));
    const char* opts[] = {"--gpu-architecture=compute_75"};
    if (nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetProgramLogSize(prog, &n);
        std::string log(n, '\0');
        nvrtcGetProgramLog(prog, &log[0]);
        std::fprintf(stderr, "nvrtc: %s\n", log.c_str());
        return 1;
    }
    size_t ptxSize = 0;
    CK_STATUS(nvrtcGetPTXSize(prog, &ptxSize));
    std::string ptx(ptxSize, '\0');
    CK_STATUS(nvrtcGetPTX(prog, &ptx[0]));
    CK_STATUS(nvrtcDestroyProgram(&prog));
    std::printf("nvrtc: compiled scale to PTX\n");

    CK(cudaFree(nullptr));  // the runtime makes the primary context current
    CUmodule mod;
    CK_CU(cuModuleLoadData(&mod, ptx.c_str()));
    CUfunction f;
    CK_CU(cuModuleGetFunction(&f, mod, "scale"));
    int ptxVersion = 0;
    CK_CU(cuFuncGetAttribute(&ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
    std::printf("scale: PTX version %d\n", ptxVersion);
    float* v;
    CK(cudaMalloc(&v, kBytes));
    float by = 2.0f;
    int n = kItems;
    void* args[] = {&v, &by, &n};
    CK_CU(cuLaunchKernel(f, kItems / kBlock, 1, 1, kBlock, 1, 1, 0, nullptr, args, nullptr));
    CK(cudaDeviceSynchronize());
    std::printf("scale launched over %d items\n", kItems);
    CK_CU(cuModuleUnload(mod));
    CK(cudaFree(v));
    return 0;
}
