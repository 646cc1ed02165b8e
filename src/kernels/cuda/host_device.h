// VB_HOST_DEVICE: functions compiled for both the GPU (nvcc) and the host (CPU tests of index maps).
#pragma once

#ifdef __CUDACC__
#define VB_HOST_DEVICE __host__ __device__
#else
#define VB_HOST_DEVICE
#endif
