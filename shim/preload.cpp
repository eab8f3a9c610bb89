// shim/preload.cpp: the exported glue only the shared library has: our dlsym, which every
// lookup goes through (static cudart calls the executable's dlsym import, which this interposes).
#include "shim/shim.h"

#include <dlfcn.h>
#include <link.h>

namespace {

// dlsym(RTLD_NEXT, name) means "the next definition after the caller's object". Forwarded from here
// the real dlsym would search after libgpuspy instead, and an interposer preloaded after us would
// find itself (endless recursion). So walk the link map from the caller's object on.
void* nextAfter(void* caller, const char* name, gpuspy::shim::DlsymFn real)
{
    Dl_info info;
    link_map* self = nullptr;
    if (!dladdr1(caller, &info, reinterpret_cast<void**>(&self), RTLD_DL_LINKMAP) || !self) return real(RTLD_DEFAULT, name);
    for (link_map* m = self->l_next; m; m = m->l_next) {
        void* h = dlopen(m->l_name && m->l_name[0] ? m->l_name : nullptr, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) continue;
        void* p = real(h, name);
        dlclose(h);
        if (!p) continue;
        link_map* owner = nullptr;
        if (dladdr1(p, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == m) return p;
    }
    return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dlsym(void* handle, const char* name)
{
    gpuspy::shim::DlsymFn real = gpuspy::shim::realDlsym();
    if (!real) return nullptr;
    const int saved = errno;
    void* p = handle == RTLD_NEXT ? nextAfter(__builtin_return_address(0), name, real) : real(handle, name);
    void* out = gpuspy::shim::interceptDlsym(handle, name, p);
    errno = saved;
    return out;
}
