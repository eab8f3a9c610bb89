// collector/model/api_names.cpp: the driver -> runtime name table. Only entries where the runtime call is
// the one users wrote; where several runtime calls share an entry point they are all named.
#include "collector/model/api_names.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace gpuspy::collect {

namespace {

bool endsWith(std::string_view s, std::string_view suffix)
{
    return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

const std::unordered_map<std::string_view, std::string_view>& table()
{
    static const std::unordered_map<std::string_view, std::string_view> k = {
        // transfers
        {"cuMemcpy", "cudaMemcpy"},
        {"cuMemcpyHtoD", "cudaMemcpy"},
        {"cuMemcpyDtoH", "cudaMemcpy"},
        {"cuMemcpyDtoD", "cudaMemcpy"},
        {"cuMemcpyAsync", "cudaMemcpyAsync"},
        {"cuMemcpyHtoDAsync", "cudaMemcpyAsync"},
        {"cuMemcpyDtoHAsync", "cudaMemcpyAsync"},
        {"cuMemcpyDtoDAsync", "cudaMemcpyAsync"},
        {"cuMemcpyPeer", "cudaMemcpyPeer"},
        {"cuMemcpyPeerAsync", "cudaMemcpyPeerAsync"},
        {"cuMemcpy2D", "cudaMemcpy2D"},
        {"cuMemcpy2DUnaligned", "cudaMemcpy2D"},
        {"cuMemcpy2DAsync", "cudaMemcpy2DAsync"},
        // cudart 13 copies to, from and between CUDA arrays with cuMemcpy3D(Async)
        {"cuMemcpy3D", "cudaMemcpy3D / cudaMemcpy*Array"},
        {"cuMemcpy3DAsync", "cudaMemcpy3DAsync / cudaMemcpy*ArrayAsync"},
        {"cuMemcpy3DPeer", "cudaMemcpy3DPeer"},
        {"cuMemcpy3DPeerAsync", "cudaMemcpy3DPeerAsync"},
        {"cuMemsetD8", "cudaMemset"},
        {"cuMemsetD8Async", "cudaMemsetAsync"},
        {"cuMemsetD2D8", "cudaMemset2D"},
        {"cuMemsetD2D8Async", "cudaMemset2DAsync"},
        {"cuMemPrefetchAsync", "cudaMemPrefetchAsync"},
        // launches
        {"cuLaunchKernel", "cudaLaunchKernel / <<<>>>"},
        {"cuLaunchKernelEx", "cudaLaunchKernelEx"},
        {"cuLaunchCooperativeKernel", "cudaLaunchCooperativeKernel"},
        {"cuLaunchHostFunc", "cudaLaunchHostFunc"},
        {"cuGraphLaunch", "cudaGraphLaunch"},
        {"cuGraphInstantiate", "cudaGraphInstantiate"},
        {"cuGraphInstantiateWithFlags", "cudaGraphInstantiateWithFlags"},
        {"cuStreamBeginCapture", "cudaStreamBeginCapture"},
        {"cuStreamEndCapture", "cudaStreamEndCapture"},
        // synchronization
        {"cuCtxSynchronize", "cudaDeviceSynchronize"},
        {"cuStreamSynchronize", "cudaStreamSynchronize"},
        {"cuEventSynchronize", "cudaEventSynchronize"},
        {"cuStreamQuery", "cudaStreamQuery"},
        {"cuEventQuery", "cudaEventQuery"},
        {"cuStreamWaitEvent", "cudaStreamWaitEvent"},
        {"cuEventRecord", "cudaEventRecord"},
        {"cuEventRecordWithFlags", "cudaEventRecordWithFlags"},
        {"cuEventElapsedTime", "cudaEventElapsedTime"},
        {"cuEventCreate", "cudaEventCreate / cudaEventCreateWithFlags"},
        {"cuEventDestroy", "cudaEventDestroy"},
        {"cuStreamDestroy", "cudaStreamDestroy"},
        // memory
        {"cuMemAlloc", "cudaMalloc"},
        {"cuMemFree", "cudaFree"},
        {"cuMemAllocPitch", "cudaMallocPitch"},
        {"cuMemAllocManaged", "cudaMallocManaged"},
        {"cuMemHostAlloc", "cudaMallocHost / cudaHostAlloc"},
        {"cuMemFreeHost", "cudaFreeHost"},
        {"cuMemHostRegister", "cudaHostRegister"},
        {"cuMemHostUnregister", "cudaHostUnregister"},
        {"cuMemAllocAsync", "cudaMallocAsync"},
        {"cuMemFreeAsync", "cudaFreeAsync"},
        {"cuMemAllocFromPoolAsync", "cudaMallocFromPoolAsync"},
        {"cuArray3DCreate", "cudaMallocArray / cudaMalloc3DArray"},
        {"cuArrayDestroy", "cudaFreeArray"},
        {"cuMipmappedArrayCreate", "cudaMallocMipmappedArray"},
        {"cuMipmappedArrayDestroy", "cudaFreeMipmappedArray"},
        {"cuMemDiscardBatchAsync", "cudaMemDiscardBatchAsync"},
        {"cuMemDiscardAndPrefetchBatchAsync", "cudaMemDiscardAndPrefetchBatchAsync"},
    };
    return k;
}

}  // namespace

std::string_view driverBaseName(std::string_view name)
{
    for (std::string_view s : {"_ptsz", "_ptds"})
        if (endsWith(name, s)) name.remove_suffix(s.size());
    for (std::string_view s : {"_v2", "_v3"})
        if (endsWith(name, s)) name.remove_suffix(s.size());
    return name;
}

std::string_view runtimeNameOf(std::string_view abiName)
{
    auto it = table().find(driverBaseName(abiName));
    return it == table().end() ? std::string_view{} : it->second;
}

std::string displayName(std::string_view abiName)
{
    std::string out(abiName);
    if (std::string_view rt = runtimeNameOf(abiName); !rt.empty()) {
        out += " (";
        out += rt;
        out += ')';
    }
    return out;
}

std::string libraryCallOf(std::string_view module, std::string_view function)
{
    struct Library {
        std::string_view module, prefix, name;
    };
    static constexpr Library kLibraries[] = {
        {"libcublasLt", "cublasLt", "cuBLASLt"}, {"libcublas", "cublas", "cuBLAS"},   {"libcudnn", "cudnn", "cuDNN"},
        {"libcufft", "cufft", "cuFFT"},          {"libcurand", "curand", "cuRAND"},   {"libcusparse", "cusparse", "cuSPARSE"},
        {"libcusolver", "cusolver", "cuSOLVER"}, {"libnccl", "nccl", "NCCL"},         {"libnvrtc", "nvrtc", "NVRTC"},
        {"libnvinfer", "", "TensorRT"},
    };
    const size_t slash = module.rfind('/');
    const std::string_view file = slash == std::string_view::npos ? module : module.substr(slash + 1);
    // The function as written, without a demangled signature; NCCL's strong aliases (pncclAllReduce, what
    // its symbol table names the code of ncclAllReduce) by the public name the user called.
    std::string_view fn = function.substr(0, std::min(function.find('('), function.size()));
    if (fn.size() > 5 && fn.substr(0, 5) == "pnccl" && std::isupper(static_cast<unsigned char>(fn[5]))) fn.remove_prefix(1);
    // cuBLAS's v2 entry points by the name cublas_v2.h lets the user write (#define cublasSgemm
    // cublasSgemm_v2); cuBLASLt has no such aliases.
    if (fn.size() > 9 && fn.substr(0, 6) == "cublas" && fn.substr(0, 8) != "cublasLt" && fn.substr(fn.size() - 3) == "_v2")
        fn.remove_suffix(3);
    for (const Library& l : kLibraries) {
        if (file.substr(0, l.module.size()) == l.module)
            return (fn.empty() ? std::string("(unnamed)") : std::string(fn)) + " (" + std::string(file) + ")";
        // Linked in: the library's C API, whose names go on with a capital or a digit (cublasSgemm_v2,
        // ncclAllReduce, cudnnConvolutionForward), never a user's own cublas_helper.
        if (!l.prefix.empty() && fn.size() > l.prefix.size() && fn.substr(0, l.prefix.size()) == l.prefix &&
            (std::isupper(static_cast<unsigned char>(fn[l.prefix.size()])) || std::isdigit(static_cast<unsigned char>(fn[l.prefix.size()]))))
            return std::string(fn) + " (" + std::string(l.name) + ", linked in)";
    }
    return {};
}

bool isLibraryModule(std::string_view module)
{
    const size_t slash = module.rfind('/');
    const std::string_view m = slash == std::string_view::npos ? module : module.substr(slash + 1);
    if (m.empty()) return false;
    for (std::string_view p : {"libcuda", "libgpuspy", "libsimcuda", "libcublas", "libcudnn", "libcufft", "libcurand",
                               "libcusparse", "libcusolver", "libnccl", "libnvrtc", "libnvJitLink", "libnvToolsExt",
                               "libnvtx", "libnvinfer", "libc.so", "libc-", "ld-linux", "libstdc++", "libgcc_s", "libpthread"})
        if (m.substr(0, p.size()) == p) return true;
    return false;
}

}  // namespace gpuspy::collect
