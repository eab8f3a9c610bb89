// drv_kernel: the one kernel the driver-API programs load from an embedded fatbin (nvcc -fatbin).
extern "C" __global__ void drv_scale(float* x, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
