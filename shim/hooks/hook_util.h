// shim/hooks/hook_util.h: the small helpers the family files share (export one template per ABI).
#pragma once

#include "shim/shim.h"

// One exported wrapper per ABI, forwarding to the family's template for it.
#define GS_WRAP(tmpl, abi, params, args) \
    GS_EXPORT CUresult abi params { return tmpl<::gpuspy::shim::Api::abi> args; }
// The same for a template that serves several ABIs of one shape: it also takes the real function's
// type, that of ABI `typed` (a _ptds/_ptsz variant has its base ABI's).
#define GS_WRAP_TYPED(tmpl, typed, abi, params, args) \
    GS_EXPORT CUresult abi params { return tmpl<::gpuspy::shim::Api::abi, decltype(&::typed)> args; }

namespace gpuspy::shim {

// The real function of ABI A, typed as ABI T (a _ptds/_ptsz variant has its base ABI's signature).
template <class T>
inline T realAs(Api a)
{
    return reinterpret_cast<T>(realPtr(a));
}

// The body most wrappers share: open the scope, let the family describe the call (only while
// recording: `describe(CallScope&)` fills the arguments, flags, stream and GPU timing), forward to
// the real function of ABI A typed Fn, finish. Returns the driver's code untouched.
template <Api A, class Fn, class Describe, class... Args>
inline CUresult forwardCall(Describe&& describe, Args... args)
{
    CallScope s(A);
    const auto real = realAs<Fn>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describe(s);
    s.beforeReal();
    return s.finish(real(args...));
}

// A call with nothing to say about itself before the real one runs.
inline void nothingBefore(CallScope&) {}

// The same where the driver's answer matters too: `after(CallScope&, CUresult)` runs after the real
// call whether or not this call is recorded (bookkeeping such as memory ranges must not depend on it).
template <Api A, class Fn, class Describe, class After, class... Args>
inline CUresult forwardThen(Describe&& describe, After&& after, Args... args)
{
    CallScope s(A);
    const auto real = realAs<Fn>(A);
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (s.active()) describe(s);
    s.beforeReal();
    const CUresult rc = real(args...);
    after(s, rc);
    return s.finish(rc);
}

}  // namespace gpuspy::shim
