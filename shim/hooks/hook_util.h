// shim/hooks/hook_util.h: the small helpers the family files share (export one template per ABI).
#pragma once

#include "shim/shim.h"

// One exported wrapper per ABI, forwarding to the family's template for it.
#define GS_WRAP(tmpl, abi, params, args) \
    GS_EXPORT CUresult abi params { return tmpl<::gpuspy::shim::Api::abi> args; }

namespace gpuspy::shim {

// The real function of ABI A, typed as ABI T (a _ptds/_ptsz variant has its base ABI's signature).
template <class T>
inline T realAs(Api a)
{
    return reinterpret_cast<T>(realPtr(a));
}

}  // namespace gpuspy::shim
