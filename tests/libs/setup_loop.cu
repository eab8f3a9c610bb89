// setup_loop: a library's setup made in every step of a loop beside the same loop with it made once (issue 28:
// library-setup-in-loop). Each of kSteps steps runs one library operation and waits for it; mode "in-loop"
// also makes the library's object before it and destroys it after (the anti-pattern), mode "once" makes it
// before the loop and destroys it after. Libraries: cufft (a 1D C2C plan, cufftPlan1d / cufftDestroy), curand
// (a generator, curandCreateGenerator / curandDestroyGenerator). Default: cufft in-loop. Kernels do not run
// on the simulated driver: the program prints what it did.
#include <cufft.h>
#include <curand.h>

#include <cstring>

#include "lib_common.h"

constexpr int kSteps = 20;
constexpr int kN = 1024;

static void fftLoop(bool inLoop)
{
    cufftComplex* data;
    CK(cudaMalloc(&data, kN * sizeof(cufftComplex)));
    CK(cudaMemset(data, 0, kN * sizeof(cufftComplex)));
    cufftHandle plan = 0;
    if (!inLoop) CK_STATUS(cufftPlan1d(&plan, kN, CUFFT_C2C, 1));
    for (int step = 0; step < kSteps; ++step) {
        if (inLoop) CK_STATUS(cufftPlan1d(&plan, kN, CUFFT_C2C, 1));
        CK_STATUS(cufftExecC2C(plan, data, data, CUFFT_FORWARD));
        CK(cudaDeviceSynchronize());
        if (inLoop) CK_STATUS(cufftDestroy(plan));
    }
    if (!inLoop) CK_STATUS(cufftDestroy(plan));
    CK(cudaFree(data));
}

static void randLoop(bool inLoop)
{
    float* data;
    CK(cudaMalloc(&data, kN * sizeof(float)));
    curandGenerator_t gen = nullptr;
    if (!inLoop) {
        CK_STATUS(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
        CK_STATUS(curandSetPseudoRandomGeneratorSeed(gen, 1234));
    }
    for (int step = 0; step < kSteps; ++step) {
        if (inLoop) {
            CK_STATUS(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
            CK_STATUS(curandSetPseudoRandomGeneratorSeed(gen, 1234 + step));
        }
        CK_STATUS(curandGenerateUniform(gen, data, kN));
        CK(cudaDeviceSynchronize());
        if (inLoop) CK_STATUS(curandDestroyGenerator(gen));
    }
    if (!inLoop) CK_STATUS(curandDestroyGenerator(gen));
    CK(cudaFree(data));
}

int main(int argc, char** argv)
{
    const char* lib = argc > 1 ? argv[1] : "cufft";
    const bool inLoop = !(argc > 2 && std::strcmp(argv[2], "once") == 0);
    if (std::strcmp(lib, "cufft") == 0) fftLoop(inLoop);
    else if (std::strcmp(lib, "curand") == 0) randLoop(inLoop);
    else {
        std::fprintf(stderr, "setup_loop: the library is cufft or curand, not '%s'\n", lib);
        return 2;
    }
    std::printf("%s: %d steps, its setup made %s: done\n", lib, kSteps, inLoop ? "in every step" : "once");
    return 0;
}
