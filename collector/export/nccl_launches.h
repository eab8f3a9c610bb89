// collector/export/nccl_launches.h: which kernel launch carried each of a process's NCCL operations
// (its Collective records), the rule collector/analyze/collectives.cpp matches them by: the first NCCL
// kernel launch of the operation's thread that began at or after NCCL began launching it, and before
// NCCL scheduled it. The exports read a rank's device and a kernel's collectives from it.
#pragma once

#include "collector/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspy::collect::exporting {

// Whether a kernel's (mangled or demangled) name is one of NCCL's device kernels.
bool isNcclKernelName(const std::string& name);

// For each of p.collectives (same order), the launch call that carried it, or null where none matched.
std::vector<const wire::CallBody*> ncclLaunchesOf(const Process& p);

// NCCL's operation name as PyTorch's c10d names it in Kineto's "Collective name" ("AllReduce" ->
// "allreduce", "AllGather" -> "all_gather"), and its datatype as c10 names it ("ncclFloat32" -> "Float");
// a name neither knows is returned as it is.
std::string c10dCollectiveName(const std::string& ncclOp);
std::string c10DtypeName(const std::string& ncclType);
// Bytes of one element of an NCCL datatype ("ncclFloat32": 4); 0 when unknown.
uint64_t ncclTypeBytes(const std::string& ncclType);

}  // namespace gpuspy::collect::exporting
