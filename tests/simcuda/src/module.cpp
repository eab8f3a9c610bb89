// Modules, libraries and kernels: cudart registers fatbins here and looks kernels up by mangled name; nothing is loaded.
#include "sim.h"

#include <cstring>

namespace simcuda {
namespace {

struct Library {
    const void* image = nullptr;
    std::map<std::string, Kernel*> kernels;
    std::map<std::string, std::pair<CUdeviceptr, size_t>> globals;
};

Library* asLibrary(const void* h) { return liveHandle<Library>(h, HandleKind::Library); }

Library* newLibrary(const void* image)
{
    auto* l = new Library;  // leaked: cudart unregisters fatbins from exit handlers
    l->image = image;
    registerHandle(l, HandleKind::Library);
    return l;
}

CUresult getKernel(Library* l, const char* name, Kernel** out)
{
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    if (!name || !out) return CUDA_ERROR_INVALID_VALUE;
    Lock g(bigLock());
    Kernel*& k = l->kernels[name];
    if (!k) {
        k = new Kernel;
        k->name = name;
        registerHandle(k, HandleKind::Kernel);
    }
    *out = k;
    return CUDA_SUCCESS;
}

// Each __device__ variable gets a zeroed device buffer of 64 KiB; its real size is in the fatbin we do not parse.
CUresult getGlobal(Library* l, const char* name, CUdeviceptr* p, size_t* n, MemKind kind)
{
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    if (!name || (!p && !n)) return CUDA_ERROR_INVALID_VALUE;
    constexpr size_t kGlobalBytes = 65536;
    Lock g(bigLock());
    auto it = l->globals.find(name);
    if (it == l->globals.end()) {
        CUdeviceptr d = 0;
        if (CUresult rc = allocDevice(&d, kGlobalBytes, kind)) return rc;
        it = l->globals.emplace(name, std::make_pair(d, kGlobalBytes)).first;
    }
    if (p) *p = it->second.first;
    if (n) *n = it->second.second;
    return CUDA_SUCCESS;
}

int funcAttribute(CUfunction_attribute a)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return 90;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: return 49152;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: return -1;
    default: return 0;
    }
}

CUresult kernelName(const char** name, const void* h)
{
    Kernel* k = asKernel(h);
    if (!name) return CUDA_ERROR_INVALID_VALUE;
    if (!k) return CUDA_ERROR_INVALID_HANDLE;
    *name = k->name.c_str();
    return CUDA_SUCCESS;
}

CUresult attribute(int* v, CUfunction_attribute a, const void* h)
{
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    if (!asKernel(h)) return CUDA_ERROR_INVALID_HANDLE;
    *v = funcAttribute(a);
    return CUDA_SUCCESS;
}

}  // namespace

Kernel* asKernel(const void* handle) { return liveHandle<Kernel>(handle, HandleKind::Kernel); }

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option*, void**, unsigned, CUlibraryOption*,
                                      void**, unsigned)
{
    SIM_API(cuLibraryLoadData);
    if (!lib || !code) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *lib = reinterpret_cast<CUlibrary>(newLibrary(code));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* lib, const char* file, CUjit_option*, void**, unsigned,
                                          CUlibraryOption*, void**, unsigned)
{
    SIM_API(cuLibraryLoadFromFile);
    if (!lib || !file) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *lib = reinterpret_cast<CUlibrary>(newLibrary(file));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary l)
{
    SIM_API(cuLibraryUnload);
    return scope.ret(asLibrary(l) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel* k, CUlibrary l, const char* name)
{
    SIM_API(cuLibraryGetKernel);
    return scope.ret(getKernel(asLibrary(l), name, reinterpret_cast<Kernel**>(k)));
}

SIM_EXPORT CUresult cuLibraryGetKernelCount(unsigned* count, CUlibrary l)
{
    SIM_API(cuLibraryGetKernelCount);
    Library* lib = asLibrary(l);
    if (!count) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!lib) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    Lock g(bigLock());
    *count = static_cast<unsigned>(lib->kernels.size());
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule* m, CUlibrary l)
{
    SIM_API(cuLibraryGetModule);
    if (!m) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!asLibrary(l)) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    *m = reinterpret_cast<CUmodule>(l);  // a library and its module are one object here
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction* f, CUkernel k)
{
    SIM_API(cuKernelGetFunction);
    if (!f) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!asKernel(k)) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    *f = reinterpret_cast<CUfunction>(k);  // a CUkernel and its CUfunction are one object here
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* p, size_t* n, CUlibrary l, const char* name)
{
    SIM_API(cuLibraryGetGlobal);
    return scope.ret(getGlobal(asLibrary(l), name, p, n, MemKind::Device));
}

SIM_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr* p, size_t* n, CUlibrary l, const char* name)
{
    SIM_API(cuLibraryGetManaged);
    return scope.ret(getGlobal(asLibrary(l), name, p, n, MemKind::Managed));
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image)
{
    SIM_API(cuModuleLoadData);
    if (!m || !image) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *m = reinterpret_cast<CUmodule>(newLibrary(image));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned, CUjit_option*, void**)
{
    SIM_API(cuModuleLoadDataEx);
    if (!m || !image) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *m = reinterpret_cast<CUmodule>(newLibrary(image));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* m, const void* image)
{
    SIM_API(cuModuleLoadFatBinary);
    if (!m || !image) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *m = reinterpret_cast<CUmodule>(newLibrary(image));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule* m, const char* file)
{
    SIM_API(cuModuleLoad);
    if (!m || !file) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *m = reinterpret_cast<CUmodule>(newLibrary(file));
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule m)
{
    SIM_API(cuModuleUnload);
    return scope.ret(asLibrary(m) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name)
{
    SIM_API(cuModuleGetFunction);
    return scope.ret(getKernel(asLibrary(m), name, reinterpret_cast<Kernel**>(f)));
}

SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* p, size_t* n, CUmodule m, const char* name)
{
    SIM_API(cuModuleGetGlobal_v2);
    return scope.ret(getGlobal(asLibrary(m), name, p, n, MemKind::Device));
}

SIM_EXPORT CUresult cuKernelGetName(const char** name, CUkernel k)
{
    SIM_API(cuKernelGetName);
    return scope.ret(kernelName(name, k));
}

SIM_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f)
{
    SIM_API(cuFuncGetName);
    return scope.ret(kernelName(name, f));
}

SIM_EXPORT CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction f)
{
    SIM_API(cuFuncGetAttribute);
    return scope.ret(attribute(v, a, f));
}

SIM_EXPORT CUresult cuKernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice)
{
    SIM_API(cuKernelGetAttribute);
    return scope.ret(attribute(v, a, k));
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute, int)
{
    SIM_API(cuFuncSetAttribute);
    return scope.ret(asKernel(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute, int, CUkernel k, CUdevice)
{
    SIM_API(cuKernelSetAttribute);
    return scope.ret(asKernel(k) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache)
{
    SIM_API(cuFuncSetCacheConfig);
    return scope.ret(asKernel(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache, CUdevice)
{
    SIM_API(cuKernelSetCacheConfig);
    return scope.ret(asKernel(k) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}

SIM_EXPORT CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig)
{
    SIM_API(cuFuncSetSharedMemConfig);
    return scope.ret(asKernel(f) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE);
}
