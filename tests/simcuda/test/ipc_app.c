/* Device memory shared between two processes, as NCCL and PyTorch share it (tests/simcuda/src/ipc.cpp, memory.cpp):
 * the parent exports a cuMemAlloc'd buffer (cuIpcGetMemHandle) and a cuMemCreate allocation (a POSIX descriptor,
 * cuMemExportToShareableHandle), then runs itself again as a second process on device 1, which opens both, reads
 * the parent's bytes and writes its own; the parent then reads them. Also checked: the return codes the real
 * driver documents (a handle opened in its own process, opened twice, freed instead of closed, closed once too
 * often; an export that
 * cuMemCreate did not request; IPC of host memory) and that an importer keeps its bytes after the exporter frees
 * the allocation. Needs SIMCUDA_DEVICES=2. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        CUresult r_ = (x);                                                                        \
        if (r_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "ipc_app: %s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)r_);        \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)
#define EXPECT(x, want)                                                                           \
    do {                                                                                          \
        CUresult r_ = (x);                                                                        \
        if (r_ != (want)) {                                                                       \
            fprintf(stderr, "ipc_app: %s:%d %s -> %d, expected %d\n", __FILE__, __LINE__, #x, (int)r_, (int)(want)); \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

enum { kBytes = 10000, kTouched = 100, kVmm = 2 << 20 };

static int allSame(const unsigned char* p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i)
        if (p[i] != v) return 0;
    return 1;
}

static int context(int ordinal)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, ordinal));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    return 0;
}

/* Maps a cuMemCreate allocation (its handle) at a fresh reservation, readable and writable from `ordinal`. */
static int mapVmm(CUmemGenericAllocationHandle h, int ordinal, CUdeviceptr* at)
{
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = ordinal;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK(cuMemAddressReserve(at, kVmm, 0, 0, 0));
    CHECK(cuMemMap(*at, kVmm, 0, h, 0));
    CHECK(cuMemSetAccess(*at, kVmm, &access, 1));
    return 0;
}

/* The second process: device 1, the parent's handle (hex) and descriptor, its pipes to and from the parent. */
static int child(const char* hex, int fd, int toParent, int fromParent)
{
    CUipcMemHandle h;
    CUdeviceptr p, again, v;
    CUmemGenericAllocationHandle imported;
    unsigned char buf[kBytes], mine[kTouched];
    if (context(1)) return 1;
    for (size_t i = 0; i < sizeof h.reserved; ++i) {
        unsigned x;
        if (sscanf(hex + 2 * i, "%2x", &x) != 1) return fprintf(stderr, "ipc_app: bad handle\n"), 1;
        h.reserved[i] = (char)x;
    }
    CHECK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK(cuMemcpyDtoH(buf, p, kBytes));
    if (!allSame(buf, kBytes, 'A')) return fprintf(stderr, "ipc_app: the opened buffer lacks the exporter's bytes\n"), 1;
    CHECK(cuIpcOpenMemHandle(&again, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    if (again != p) return fprintf(stderr, "ipc_app: a handle opened twice gave two pointers\n"), 1;
    memset(mine, 'B', sizeof mine);
    CHECK(cuMemcpyHtoD(p, mine, sizeof mine));
    EXPECT(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  /* an opened handle is closed, not freed */
    CHECK(cuIpcCloseMemHandle(p));
    CHECK(cuIpcCloseMemHandle(p));
    EXPECT(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);

    CHECK(cuMemImportFromShareableHandle(&imported, (void*)(long)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);  /* the importer owns its descriptor: the allocation stays */
    if (mapVmm(imported, 1, &v)) return 1;
    CHECK(cuMemcpyDtoH(buf, v, kBytes));
    if (!allSame(buf, kBytes, 'V')) return fprintf(stderr, "ipc_app: the imported allocation lacks the exporter's bytes\n"), 1;
    memset(mine, 'W', sizeof mine);
    CHECK(cuMemcpyHtoD(v, mine, sizeof mine));
    CHECK(cuMemUnmap(v, kVmm));
    CHECK(cuMemAddressFree(v, kVmm));
    CHECK(cuMemRelease(imported));
    /* Kept: the parent frees its buffer after this process opened it; this one reads it then. */
    CHECK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    if (write(toParent, "o", 1) != 1 || read(fromParent, buf, 1) != 1) return fprintf(stderr, "ipc_app: lost the parent\n"), 1;
    CHECK(cuMemcpyDtoH(buf, p, kTouched));
    if (!allSame(buf, kTouched, 'B')) return fprintf(stderr, "ipc_app: the exporter's cuMemFree took the importer's bytes\n"), 1;
    CHECK(cuIpcCloseMemHandle(p));
    return 0;
}

int main(int argc, char** argv)
{
    if (argc == 6 && strcmp(argv[1], "child") == 0) return child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    CUdeviceptr d, v, other;
    CUipcMemHandle h;
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle alloc, plain;
    void* host;
    int fd = -1, toChild[2], toParent[2], status = 0;
    unsigned char buf[kBytes];
    char hex[2 * sizeof h.reserved + 1], fdArg[16], wArg[16], rArg[16];
    if (context(0)) return 1;
    CHECK(cuMemAlloc(&d, kBytes));
    memset(buf, 'A', sizeof buf);
    CHECK(cuMemcpyHtoD(d, buf, kBytes));
    CHECK(cuIpcGetMemHandle(&h, d));
    EXPECT(cuIpcOpenMemHandle(&other, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(cuIpcOpenMemHandle(&other, h, 7), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAllocHost(&host, 64));
    EXPECT(cuIpcGetMemHandle(&h, (CUdeviceptr)host), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuIpcGetMemHandle(&h, d));  /* again: the same allocation, still shared */

    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK(cuMemCreate(&plain, kVmm, &prop, 0));
    EXPECT(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemRelease(plain));
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CHECK(cuMemCreate(&alloc, kVmm, &prop, 0));
    if (mapVmm(alloc, 0, &v)) return 1;
    memset(buf, 'V', sizeof buf);
    CHECK(cuMemcpyHtoD(v, buf, kBytes));
    CHECK(cuMemExportToShareableHandle(&fd, alloc, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));

    for (size_t i = 0; i < sizeof h.reserved; ++i) sprintf(hex + 2 * i, "%02x", (unsigned char)h.reserved[i]);
    snprintf(fdArg, sizeof fdArg, "%d", fd);
    if (pipe(toChild) != 0 || pipe(toParent) != 0) return perror("ipc_app: pipe"), 1;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        /* The exported descriptor and the child's pipe ends stay open across the exec. */
        snprintf(wArg, sizeof wArg, "%d", toParent[1]);
        snprintf(rArg, sizeof rArg, "%d", toChild[0]);
        execl("/proc/self/exe", argv[0], "child", hex, fdArg, wArg, rArg, (char*)NULL);
        _exit(127);
    }
    close(toParent[1]);
    close(toChild[0]);
    close(fd);
    char c;
    if (read(toParent[0], &c, 1) != 1) return fprintf(stderr, "ipc_app: the child ended early\n"), 1;
    /* The child wrote its bytes into both and holds the buffer open: this process frees its own now. */
    CHECK(cuMemcpyDtoH(buf, d, kBytes));
    if (!allSame(buf, kTouched, 'B') || !allSame(buf + kTouched, kBytes - kTouched, 'A'))
        return fprintf(stderr, "ipc_app: the child's writes to the IPC buffer are not seen here\n"), 1;
    CHECK(cuMemcpyDtoH(buf, v, kBytes));
    if (!allSame(buf, kTouched, 'W') || !allSame(buf + kTouched, kBytes - kTouched, 'V'))
        return fprintf(stderr, "ipc_app: the child's writes to the exported allocation are not seen here\n"), 1;
    CHECK(cuMemFree(d));
    if (write(toChild[1], "g", 1) != 1) return 1;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fprintf(stderr, "ipc_app: the child failed (status %d)\n", status), 1;
    CHECK(cuMemUnmap(v, kVmm));
    CHECK(cuMemAddressFree(v, kVmm));
    CHECK(cuMemRelease(alloc));
    CHECK(cuMemFreeHost(host));
    printf("ipc_app: ok\n");
    return 0;
}
