// Legacy CUDA IPC: device memory shared with other processes (cuIpcGetMemHandle, cuIpcOpenMemHandle,
// cuIpcCloseMemHandle), as NCCL (NCCL_CUMEM_ENABLE=0), PyTorch's CUDA tensors sent between processes and custom
// all-reduce kernels use it.
//
// Device memory is host memory in whole pages of its own (allocDevice). The first cuIpcGetMemHandle of an
// allocation moves its bytes into a memfd mapped over the same pages (MAP_SHARED, the address unchanged), which
// the process keeps open until cuMemFree; the 64-byte handle names the exporting process, that descriptor and
// the memfd's inode. cuIpcOpenMemHandle in another process opens the descriptor through /proc/PID/fd (same user)
// and maps the same bytes at an address of its own: a write on either side is seen on the other. As the real
// driver: opening in the exporting process is CUDA_ERROR_INVALID_CONTEXT; a handle opened again in a process
// returns the same pointer with one more reference, cuIpcCloseMemHandle drops one and unmaps at the last (cuMemFree
// of it is CUDA_ERROR_INVALID_VALUE); the
// importer's mapping outlives the exporter's cuMemFree (the bytes stay until its close). Not modelled: event
// handles (cuIpcGetEventHandle), IPC of stream-ordered pool or VMM memory (use cuMemExportToShareableHandle).
#include "sim.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace simcuda {
namespace {

constexpr char kMagic[8] = "simipc1";

struct Handle {  // laid out in CUipcMemHandle's 64 bytes
    char magic[8];
    int32_t pid;
    int32_t fd;
    int32_t dev;  // physical device
    int32_t unused;
    uint64_t bytes;   // the allocation's size
    uint64_t mapped;  // whole pages
    uint64_t ino;
};
static_assert(sizeof(Handle) <= sizeof(CUipcMemHandle), "a handle fits CU_IPC_HANDLE_SIZE");

struct Export {
    int fd;
    uint64_t mapped, ino;
};
struct Import {
    std::pair<int32_t, uint64_t> key;  // exporter pid, inode
    size_t mapped;
    int refs;
};

// Under bigLock.
std::map<uintptr_t, Export>& exports()
{
    static auto* m = new std::map<uintptr_t, Export>;  // leaked: the driver outlives static destructors
    return *m;
}
std::map<uintptr_t, Import>& imports()
{
    static auto* m = new std::map<uintptr_t, Import>;
    return *m;
}

// Moves the allocation's bytes into a memfd mapped over the same pages.
CUresult share(uintptr_t base, const Range& r, Export* out)
{
    const size_t mapped = (r.size + kPageBytes - 1) & ~(kPageBytes - 1);
    char name[32];
    snprintf(name, sizeof name, "simcuda-ipc-dev%d", physicalDevice(r.dev));
    const int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    struct stat st;
    bool ok = ftruncate(fd, static_cast<off_t>(mapped)) == 0;
    for (size_t done = 0; ok && done < r.size;) {
        const ssize_t n = pwrite(fd, reinterpret_cast<const char*>(base) + done, r.size - done, static_cast<off_t>(done));
        ok = n > 0;
        done += ok ? size_t(n) : 0;
    }
    ok = ok && fstat(fd, &st) == 0 &&
         mmap(reinterpret_cast<void*>(base), mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
    if (!ok) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = Export{fd, mapped, static_cast<uint64_t>(st.st_ino)};
    return CUDA_SUCCESS;
}

CUresult openHandle(CUdeviceptr* p, const CUipcMemHandle& raw, unsigned flags)
{
    if (!p || (flags & ~unsigned(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))) return CUDA_ERROR_INVALID_VALUE;
    Handle h;
    memcpy(&h, &raw, sizeof h);
    if (memcmp(h.magic, kMagic, sizeof kMagic) != 0 || !h.mapped) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = currentContext();
    if (!ctx) return noContextError();
    if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT;  // a handle is opened by other processes only
    Lock g(bigLock());
    const std::pair<int32_t, uint64_t> key{h.pid, h.ino};
    for (auto& [at, im] : imports())
        if (im.key == key) {
            ++im.refs;
            *p = at;
            return CUDA_SUCCESS;
        }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", h.pid, h.fd);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;  // the exporter ended, or freed the allocation
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_ino) != h.ino || static_cast<uint64_t>(st.st_size) != h.mapped) {
        close(fd);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    void* m = mmap(nullptr, h.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return CUDA_ERROR_MAP_FAILED;
    const uintptr_t at = reinterpret_cast<uintptr_t>(m);
    // The exporter's GPU by the ordinal this process has for it; one it does not see: the opening context's.
    const int dev = visibleOrdinal(h.dev);
    addSharedRange(at, h.bytes, dev >= 0 ? dev : ctx->dev, ctx);
    imports()[at] = Import{key, h.mapped, 1};
    *p = at;
    return CUDA_SUCCESS;
}

}  // namespace

void ipcForgetExport(uintptr_t base, size_t)
{
    Lock g(bigLock());
    auto it = exports().find(base);
    if (it == exports().end()) return;
    // Private pages again before malloc has them back; importers keep the memfd's bytes until they close.
    mmap(reinterpret_cast<void*>(base), it->second.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    close(it->second.fd);
    exports().erase(it);
}

}  // namespace simcuda

using namespace simcuda;

SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* out, CUdeviceptr p)
{
    SIM_API(cuIpcGetMemHandle);
    if (!out) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!currentContext()) return scope.ret(noContextError());
    uintptr_t base;
    Range r;
    // cuMemAlloc'd device memory only: not host, managed, pool or VMM memory, nor an opened handle's mapping.
    if (!findRange(p, &base, &r) || r.kind != MemKind::Device || r.vmm || r.pool || r.imported || base % kPageBytes)
        return scope.ret(CUDA_ERROR_INVALID_VALUE);
    Lock g(bigLock());
    auto it = exports().find(base);
    if (it == exports().end()) {
        Export e;
        if (CUresult rc = share(base, r, &e)) return scope.ret(rc);
        it = exports().emplace(base, e).first;
    }
    Handle h{};
    memcpy(h.magic, kMagic, sizeof kMagic);
    h.pid = getpid();
    h.fd = it->second.fd;
    h.dev = physicalDevice(r.dev);  // the GPU, not this process's ordinal for it (CUDA_VISIBLE_DEVICES)
    h.bytes = r.size;
    h.mapped = it->second.mapped;
    h.ino = it->second.ino;
    memset(out, 0, sizeof *out);
    memcpy(out, &h, sizeof h);
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* p, CUipcMemHandle h, unsigned flags)
{
    SIM_API(cuIpcOpenMemHandle);
    return scope.ret(openHandle(p, h, flags));
}

SIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* p, CUipcMemHandle h, unsigned flags)
{
    SIM_API(cuIpcOpenMemHandle_v2);
    return scope.ret(openHandle(p, h, flags));
}

SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr p)
{
    SIM_API(cuIpcCloseMemHandle);
    if (!currentContext()) return scope.ret(noContextError());
    Lock g(bigLock());
    auto it = imports().find(p);
    if (it == imports().end()) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (--it->second.refs > 0) return scope.ret(CUDA_SUCCESS);
    removeSharedRange(p);
    munmap(reinterpret_cast<void*>(p), it->second.mapped);
    imports().erase(it);
    return scope.ret(CUDA_SUCCESS);
}
