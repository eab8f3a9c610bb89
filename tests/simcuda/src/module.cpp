// Modules, libraries and kernels: cudart registers fatbins here and looks kernels up by mangled name; nothing is loaded.
#include "fatbin.h"
#include "sim.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace simcuda {
namespace {

struct Library {
    const void* image = nullptr;
    std::string fileBytes;  // for images loaded from a file
    ModuleImage chosen;
    std::map<std::string, Kernel*> kernels;
    std::map<std::string, std::pair<CUdeviceptr, size_t>> globals;
};

Library* asLibrary(const void* h) { return liveHandle<Library>(h, HandleKind::Library); }

// The compute capability of the current context's device (major*10+minor), 90 without one.
int currentArch()
{
    Context* c = currentContext();
    const int dev = c ? c->dev : 0;
    return deviceAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) * 10 +
           deviceAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

// Parses the image as the device's driver would (fatbin.h): NO_BINARY_FOR_GPU when nothing in it can run.
CUresult newLibrary(const void* image, Library** out, std::string fileBytes = {})
{
    auto* l = new Library;  // leaked: cudart unregisters fatbins from exit handlers
    l->fileBytes = std::move(fileBytes);
    l->image = l->fileBytes.empty() ? image : l->fileBytes.data();
    l->chosen = parseModuleImage(l->image, currentArch());
    if (!l->chosen.loadable) {
        delete l;
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    registerHandle(l, HandleKind::Library);
    *out = l;
    return CUDA_SUCCESS;
}

template <class H>
CUresult loadData(H* handle, const void* image)
{
    if (!handle || !image) return CUDA_ERROR_INVALID_VALUE;
    Library* l = nullptr;
    if (CUresult rc = newLibrary(image, &l)) return rc;
    *handle = reinterpret_cast<H>(l);
    return CUDA_SUCCESS;
}

// A file is read whole; one that cannot be read is CUDA_ERROR_FILE_NOT_FOUND.
template <class H>
CUresult loadFile(H* handle, const char* path)
{
    if (!handle || !path) return CUDA_ERROR_INVALID_VALUE;
    std::ifstream in(path, std::ios::binary);
    if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string data = bytes.str();
    data.push_back('\0');  // PTX text is read as a C string
    Library* l = nullptr;
    if (CUresult rc = newLibrary(nullptr, &l, std::move(data))) return rc;
    *handle = reinterpret_cast<H>(l);
    return CUDA_SUCCESS;
}

// Kernel names of the chosen image, for enumeration (nullptr when the image could not be read).
const std::vector<std::string>* functionNames(Library* l)
{
    return l->chosen.namesKnown ? &l->chosen.functions : nullptr;
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
        k->ptxVersion = l->chosen.ptxVersion;
        k->binaryVersion = l->chosen.binaryVersion;
        registerHandle(k, HandleKind::Kernel);
    }
    *out = k;
    return CUDA_SUCCESS;
}

// Each __device__ variable gets a zeroed device buffer of 64 KiB; its real size is in the fatbin we do not parse.
// A cubin whose symbol table was read answers CUDA_ERROR_NOT_FOUND for a name it defines no variable of.
CUresult getGlobal(Library* l, const char* name, CUdeviceptr* p, size_t* n, MemKind kind)
{
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    if (!name || (!p && !n)) return CUDA_ERROR_INVALID_VALUE;
    if (l->chosen.globalsKnown &&
        std::find(l->chosen.globals.begin(), l->chosen.globals.end(), name) == l->chosen.globals.end())
        return CUDA_ERROR_NOT_FOUND;  // the module defines no variable of that name
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

int funcAttribute(const Kernel* k, CUfunction_attribute a)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: return 32;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: return k->ptxVersion;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: return k->binaryVersion;
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
    const Kernel* k = asKernel(h);
    if (!k) return CUDA_ERROR_INVALID_HANDLE;
    *v = funcAttribute(k, a);
    return CUDA_SUCCESS;
}

// The image's kernels when its names could be read, else the ones looked up so far.
CUresult functionCount(Library* l, unsigned* count)
{
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    Lock g(bigLock());
    const auto* names = functionNames(l);
    *count = static_cast<unsigned>(names ? names->size() : l->kernels.size());
    return CUDA_SUCCESS;
}

CUresult enumerateFunctions(Library* l, Kernel** out, unsigned n)
{
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    std::vector<std::string> names;
    {
        Lock g(bigLock());
        if (const auto* known = functionNames(l)) names = *known;
        else
            for (const auto& kv : l->kernels) names.push_back(kv.first);
    }
    if (n > names.size()) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; ++i)
        if (CUresult rc = getKernel(l, names[i].c_str(), &out[i])) return rc;
    return CUDA_SUCCESS;
}

}  // namespace

CUresult moduleKernels(CUmodule m, std::vector<Kernel*>* out)
{
    Library* l = asLibrary(m);
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    unsigned n = 0;
    if (CUresult rc = functionCount(l, &n)) return rc;
    out->resize(n);
    return enumerateFunctions(l, out->data(), n);
}

Kernel* asKernel(const void* handle) { return liveHandle<Kernel>(handle, HandleKind::Kernel); }

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option*, void**, unsigned, CUlibraryOption*,
                                      void**, unsigned)
{
    SIM_API(cuLibraryLoadData);
    return scope.ret(loadData(lib, code));
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* lib, const char* file, CUjit_option*, void**, unsigned,
                                          CUlibraryOption*, void**, unsigned)
{
    SIM_API(cuLibraryLoadFromFile);
    return scope.ret(loadFile(lib, file));
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
    return scope.ret(functionCount(asLibrary(l), count));
}

SIM_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned n, CUlibrary l)
{
    SIM_API(cuLibraryEnumerateKernels);
    return scope.ret(enumerateFunctions(asLibrary(l), reinterpret_cast<Kernel**>(kernels), n));
}

SIM_EXPORT CUresult cuModuleGetFunctionCount(unsigned* count, CUmodule m)
{
    SIM_API(cuModuleGetFunctionCount);
    return scope.ret(functionCount(asLibrary(m), count));
}

SIM_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned n, CUmodule m)
{
    SIM_API(cuModuleEnumerateFunctions);
    return scope.ret(enumerateFunctions(asLibrary(m), reinterpret_cast<Kernel**>(functions), n));
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
    return scope.ret(loadData(m, image));
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned, CUjit_option*, void**)
{
    SIM_API(cuModuleLoadDataEx);
    return scope.ret(loadData(m, image));
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* m, const void* image)
{
    SIM_API(cuModuleLoadFatBinary);
    return scope.ret(loadData(m, image));
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule* m, const char* file)
{
    SIM_API(cuModuleLoad);
    return scope.ret(loadFile(m, file));
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
