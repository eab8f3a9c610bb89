// Module images as the driver meets them (a fatbin wrapper, a fatbin, a cubin ELF, PTX text), and the choice a
// real driver on a device of compute capability `arch` (major*10+minor) makes among a fatbin's images.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace simcuda {

struct ModuleImage {
    bool recognised = false;  // a fatbin, cubin or PTX text; anything else is accepted as an opaque image
    bool loadable = true;     // false: no SASS for the device and no PTX it can JIT (CUDA_ERROR_NO_BINARY_FOR_GPU)
    bool jit = false;         // chosen from PTX
    int binaryVersion = 0;    // CU_FUNC_ATTRIBUTE_BINARY_VERSION: the SASS the device runs (the device's arch after JIT)
    int ptxVersion = 0;       // CU_FUNC_ATTRIBUTE_PTX_VERSION: the virtual arch the code came from
    bool namesKnown = false;  // the chosen image could be read (decompressed) for its entry functions
    std::vector<std::string> functions;  // kernel (entry) names of the chosen image, in image order
    // The chosen image is a cubin whose symbol table was read: `globals` holds every variable it defines
    // (__device__, __constant__, __managed__), and a global of another name is CUDA_ERROR_NOT_FOUND, as a
    // real driver answers. PTX images (and unread ones) accept any name.
    bool globalsKnown = false;
    std::vector<std::string> globals;
};

// The rule: SASS whose arch has the device's major and a minor not above the device's, the highest such;
// else the PTX of the highest virtual arch not above the device's, JIT-compiled for the device.
// A SASS image's PTX version is taken to be its own arch (nvcc compiles sm_XY from compute_XY by default).
ModuleImage parseModuleImage(const void* image, int arch);

// Decompressors for fatbin payloads (flags 0x2000 LZ4 block, 0x8000 zstd); false on malformed input.
bool lz4BlockDecompress(const unsigned char* in, size_t inSize, unsigned char* out, size_t outSize);

}  // namespace simcuda
