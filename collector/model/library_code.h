// collector/model/library_code.h: code that is a library's though it sits in the user's binary or
// script: the CUDA toolkit's headers inlined into the user's file (CUB, thrust, libcu++, cooperative
// groups), and in Python the installed packages and the standard library. A call site is the first
// frame outside them; the library call the user made is named after the outermost of them.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace gpuspy::collect {

// A frame of code compiled from the CUDA toolkit's headers: by its source file when the binary has line
// information (<toolkit>/include/..., cccl/, /usr/include/thrust/...), else by the versioned namespaces
// CCCL puts its code in (cub::CUB_300001_SM_750::, thrust::THRUST_300001_SM_750_NS::, cuda::std::__4::).
bool isToolkitHeaderCode(std::string_view file, std::string_view function);

// The call a user wrote into toolkit header code, from its outermost frame: "cub::DeviceRadixSort::SortKeys
// (CUB)", "thrust::device_vector::device_vector (thrust)"; "" when the frame is not toolkit header code.
std::string toolkitCallOf(std::string_view file, std::string_view function);

// A function of the statically linked runtime's internals (libcudart_static_<hash>, __cudart*, cudart::):
// hashed or internal names a user never wrote.
bool isStaticRuntimeInternal(std::string_view function);

// A demangled function's name without its parameters and return type: "void foo<int>(int)" -> "foo<int>".
std::string functionBase(std::string_view function);

// An entry point of the CUDA runtime linked statically into the app (cudaMemcpy, cudaLaunchKernel<char>):
// a cuda* function without line information or from CUDA's runtime headers (a user's own cudaCheck()
// compiled with -g has its own file).
bool isRuntimeEntryPoint(std::string_view function, std::string_view file);

// A native frame that is not the user's code: CUDA's libraries and gpuspy (by module), the runtime linked
// statically into the app, the launch stubs nvcc generates, libc's start-up, CUDA's runtime headers,
// toolkit header code inlined into the user's file and a library's C API linked in. The report's call
// sites and the exports' frames ask the same question; `kernelStub`, where the caller knows the kernels,
// says whether a function's base name is the host stub nvcc names after one.
bool isLibraryFrame(std::string_view module, std::string_view function, std::string_view file,
                    const std::function<bool(const std::string&)>& kernelStub = nullptr);

// A Python source file of an installed package or of the standard library (site-packages,
// dist-packages, /usr/lib/python3.X/, a virtual environment's lib/): never the user's own line.
bool isInstalledPython(std::string_view file);

// The package an installed Python file belongs to: "numba" for .../site-packages/numba/cuda/driver.py,
// "python" for the standard library.
std::string pythonPackageOf(std::string_view file);

}  // namespace gpuspy::collect
