# tests/report/numba_binding.py: numba 0.56's CUDA binding on a CUDA 13 driver (issue 28): it binds
# cuCtxGetDevice by the name cuCtxGetDevice_v2 with the old one-argument signature, so its first device
# array fails there with CUDA_ERROR_INVALID_CONTEXT (numba raises CudaAPIError, exit status 1).
import numpy as np
from numba import cuda

print("devices:", len(cuda.gpus), flush=True)
device_array = cuda.to_device(np.arange(16, dtype=np.float32))
print("copied back:", device_array.copy_to_host()[:4])
