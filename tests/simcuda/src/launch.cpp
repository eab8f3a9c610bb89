// Kernel launches: the modelled duration from SIMCUDA_KERNEL_NS, and occupancy answers. Kernels never execute.
#include "sim.h"

#include <cxxabi.h>

#include <cstdlib>

namespace simcuda {
namespace {

// First SIMCUDA_KERNEL_NS rule whose regex is found in the mangled or the demangled name wins.
Ns kernelDuration(Kernel* k)
{
    if (k->duration >= 0) return k->duration;
    const Config& c = config();
    std::string demangled;
    int status = 0;
    if (char* d = abi::__cxa_demangle(k->name.c_str(), nullptr, nullptr, &status)) {
        demangled = d;
        free(d);
    }
    Ns ns = c.kernelDefault;
    for (const KernelRule& r : c.kernelRules) {
        if (std::regex_search(k->name, r.re) || (!demangled.empty() && std::regex_search(demangled, r.re))) {
            ns = r.ns;
            break;
        }
    }
    k->duration = ns;
    return ns;
}

}  // namespace

CUresult kernelOp(CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem, Op* out)
{
    Kernel* k = asKernel(f);
    if (!k) return CUDA_ERROR_INVALID_HANDLE;
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2]) return CUDA_ERROR_INVALID_VALUE;
    if (static_cast<unsigned long long>(block[0]) * block[1] * block[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
    Op op;
    op.kind = OpKind::Kernel;
    op.name = k->name;
    {
        Lock g(bigLock());
        op.duration = kernelDuration(k);
    }
    for (int i = 0; i < 3; ++i) {
        op.grid[i] = grid[i];
        op.block[i] = block[i];
    }
    op.smem = smem;
    *out = std::move(op);
    return CUDA_SUCCESS;
}

namespace {

CUresult launch(const char* api, CUfunction f, const unsigned grid[3], const unsigned block[3], unsigned smem, CUstream h,
                bool pt)
{
    Op op;
    if (CUresult rc = kernelOp(f, grid, block, smem, &op)) return rc;
    Stream* s = nullptr;
    if (CUresult rc = lookupStream(h, pt, &s)) return rc;
    return submitOp(s, std::move(op), api);
}

CUresult launchPlain(const char* api, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned smem, CUstream h, bool pt)
{
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    return launch(api, f, grid, block, smem, h, pt);
}

CUresult launchEx(const char* api, const CUlaunchConfig* c, CUfunction f, bool pt)
{
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ}, block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
    return launch(api, f, grid, block, c->sharedMemBytes, c->hStream, pt);
}

CUresult occupancy(int* n, int blockSize)
{
    if (!n || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
    *n = std::max(1, std::min(32, 2048 / blockSize));
    return CUDA_SUCCESS;
}

// Clusters of the launch's cluster size (the CLUSTER_DIMENSION attribute, else 1) that fit at once: the blocks
// the device holds (132 SMs times the per-SM occupancy) divided by the cluster's blocks; 0 past 16 blocks (the
// non-portable maximum), as a real driver answers for a cluster that cannot be scheduled.
CUresult maxActiveClusters(int* n, CUfunction f, const CUlaunchConfig* c)
{
    if (!n || !c) return CUDA_ERROR_INVALID_VALUE;
    if (!asKernel(f)) return CUDA_ERROR_INVALID_HANDLE;
    unsigned cluster = 1;
    for (unsigned i = 0; i < c->numAttrs; ++i)
        if (c->attrs && c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            const auto& d = c->attrs[i].value.clusterDim;
            cluster = std::max(1u, d.x) * std::max(1u, d.y) * std::max(1u, d.z);
        }
    const unsigned long long threads = 1ULL * c->blockDimX * c->blockDimY * c->blockDimZ;
    if (!threads || threads > 1024) return CUDA_ERROR_INVALID_VALUE;
    int perSm = 0;
    occupancy(&perSm, static_cast<int>(threads));
    *n = cluster > 16 ? 0 : static_cast<int>(132 * perSm / cluster);
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

SIM_PAIR(cuLaunchKernel, cuLaunchKernel_ptsz,
         (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
          CUstream h, void**, void**),
         launchPlain(scope.name(), f, gx, gy, gz, bx, by, bz, smem, h, pt))
SIM_PAIR(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
         (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem,
          CUstream h, void**),
         launchPlain(scope.name(), f, gx, gy, gz, bx, by, bz, smem, h, pt))
SIM_PAIR(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, (const CUlaunchConfig* c, CUfunction f, void**, void**),
         launchEx(scope.name(), c, f, pt))

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, CUfunction, int blockSize, size_t)
{
    SIM_API(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    return scope.ret(occupancy(n, blockSize));
}

SIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, CUfunction, int blockSize, size_t, unsigned)
{
    SIM_API(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags);
    return scope.ret(occupancy(n, blockSize));
}

SIM_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* smem, CUfunction, int, int)
{
    SIM_API(cuOccupancyAvailableDynamicSMemPerBlock);
    if (!smem) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    *smem = 49152;
    return scope.ret(CUDA_SUCCESS);
}

SIM_EXPORT CUresult cuOccupancyMaxActiveClusters(int* n, CUfunction f, const CUlaunchConfig* c)
{
    SIM_API(cuOccupancyMaxActiveClusters);
    return scope.ret(maxActiveClusters(n, f, c));
}

SIM_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int* n, CUfunction f, const CUlaunchConfig* c)
{
    SIM_API(cuOccupancyMaxPotentialClusterSize);
    if (!n || !c) return scope.ret(CUDA_ERROR_INVALID_VALUE);
    if (!asKernel(f)) return scope.ret(CUDA_ERROR_INVALID_HANDLE);
    *n = 8;  // the portable maximum
    return scope.ret(CUDA_SUCCESS);
}
