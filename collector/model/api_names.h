// collector/model/api_names.h: driver entry points named as users know them: the runtime call each one comes
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

// A stack frame inside one of NVIDIA's libraries (cuBLAS, cuBLASLt, cuDNN, cuFFT, cuRAND, cuSPARSE,
// cuSOLVER, NCCL, NVRTC, TensorRT), named as the call a user made: "cublasSgemm_v2 (libcublas.so.13)",
// by the frame's module, or by the function's prefix for a library linked in statically
// ("cublasSgemm_v2 (cuBLAS, linked in)"); "" for any other frame. A call site whose CUDA call came
// from inside a library names the library call below its own frame with it.
std::string libraryCallOf(std::string_view module, std::string_view function);

// A module that is never the app's own code: CUDA's driver, runtime and libraries, gpuspy, the C and
// C++ runtimes (by the file name of its path).
bool isLibraryModule(std::string_view module);

}  // namespace gpuspy::collect
