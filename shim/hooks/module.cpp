// shim/hooks/module.cpp: module and library loads (their host cost), and the kernel handles whose
// names launches are reported with.
#include "shim/hooks/hook_util.h"

namespace gpuspy::shim {
namespace {

template <Api A>
CUresult moduleLoad(CUmodule* m, const char* path)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuModuleLoad)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(m, path));
}

template <Api A>
CUresult moduleLoadData(CUmodule* m, const void* image)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuModuleLoadData)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(m, image));
}

template <Api A>
CUresult moduleLoadDataEx(CUmodule* m, const void* image, unsigned int n, CUjit_option* opts, void** vals)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuModuleLoadDataEx)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(m, image, n, opts, vals));
}

template <Api A>
CUresult moduleLoadFatBinary(CUmodule* m, const void* fatbin)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuModuleLoadFatBinary)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(m, fatbin));
}

template <Api A>
CUresult libraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jo, void** jv, unsigned int jn,
                         CUlibraryOption* lo, void** lv, unsigned int ln)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLibraryLoadData)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(lib, code, jo, jv, jn, lo, lv, ln));
}

template <Api A>
CUresult libraryLoadFromFile(CUlibrary* lib, const char* path, CUjit_option* jo, void** jv, unsigned int jn,
                             CUlibraryOption* lo, void** lv, unsigned int ln)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLibraryLoadFromFile)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    return s.finish(real(lib, path, jo, jv, jn, lo, lv, ln));
}

// Names are interned even when not recording (the handle may be launched after recording starts).
template <Api A>
CUresult moduleGetFunction(CUfunction* f, CUmodule m, const char* name)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuModuleGetFunction)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(f, m, name);
    if (rc == CUDA_SUCCESS && f) internKernelName(*f, name);
    return s.finish(rc);
}

template <Api A>
CUresult libraryGetKernel(CUkernel* k, CUlibrary lib, const char* name)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuLibraryGetKernel)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(k, lib, name);
    if (rc == CUDA_SUCCESS && k) internKernelName(*k, name);
    return s.finish(rc);
}

template <Api A>
CUresult kernelGetFunction(CUfunction* f, CUkernel k)
{
    CallScope s(A);
    auto real = realAs<decltype(&::cuKernelGetFunction)>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    s.beforeReal();
    const CUresult rc = real(f, k);
    if (rc == CUDA_SUCCESS && f) aliasKernel(*f, k);
    return s.finish(rc);
}

}  // namespace
}  // namespace gpuspy::shim

using namespace gpuspy::shim;

GS_WRAP(moduleLoad, cuModuleLoad, (CUmodule* m, const char* p), (m, p))
GS_WRAP(moduleLoadData, cuModuleLoadData, (CUmodule* m, const void* i), (m, i))
GS_WRAP(moduleLoadDataEx, cuModuleLoadDataEx, (CUmodule* m, const void* i, unsigned int n, CUjit_option* o, void** v), (m, i, n, o, v))
GS_WRAP(moduleLoadFatBinary, cuModuleLoadFatBinary, (CUmodule* m, const void* f), (m, f))
GS_WRAP(libraryLoadData, cuLibraryLoadData,
        (CUlibrary* l, const void* c, CUjit_option* jo, void** jv, unsigned int jn, CUlibraryOption* lo, void** lv, unsigned int ln),
        (l, c, jo, jv, jn, lo, lv, ln))
GS_WRAP(libraryLoadFromFile, cuLibraryLoadFromFile,
        (CUlibrary* l, const char* p, CUjit_option* jo, void** jv, unsigned int jn, CUlibraryOption* lo, void** lv, unsigned int ln),
        (l, p, jo, jv, jn, lo, lv, ln))
GS_WRAP(moduleGetFunction, cuModuleGetFunction, (CUfunction* f, CUmodule m, const char* n), (f, m, n))
GS_WRAP(libraryGetKernel, cuLibraryGetKernel, (CUkernel* k, CUlibrary l, const char* n), (k, l, n))
GS_WRAP(kernelGetFunction, cuKernelGetFunction, (CUfunction* f, CUkernel k), (f, k))
