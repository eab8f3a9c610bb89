// collector/model/library_code.cpp: see library_code.h.
#include "collector/model/library_code.h"

#include "collector/model/api_names.h"

#include <cctype>
#include <vector>

namespace gpuspy::collect {

namespace {

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Where pip and Debian install Python packages.
constexpr std::string_view kPackageRoots[] = {"/site-packages/", "/dist-packages/"};

bool isVersionDir(std::string_view d)
{
    // "cuda", "cuda-13.0", "cuda-12"
    if (d == "cuda") return true;
    if (d.substr(0, 5) != "cuda-" || d.size() == 5) return false;
    for (char c : d.substr(5))
        if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
    return true;
}

// The directory component before position `end` (exclusive) of `path`.
std::string_view componentBefore(std::string_view path, size_t end)
{
    const size_t slash = path.rfind('/', end ? end - 1 : 0);
    if (slash == std::string_view::npos || slash >= end) return {};
    return path.substr(slash + 1, end - slash - 1);
}

// Removes template arguments (<...>, nested) from a name.
std::string withoutTemplateArgs(std::string_view s)
{
    std::string out;
    int depth = 0;
    for (char c : s) {
        if (c == '<') ++depth;
        else if (c == '>') depth = depth > 0 ? depth - 1 : 0;
        else if (depth == 0) out += c;
    }
    return out;
}

// CCCL's and libcu++'s versioned inline namespaces: CUB_300001_SM_750, THRUST_300001_SM_750_NS, __4.
bool isVersionNamespace(std::string_view c)
{
    if (c.substr(0, 4) == "CUB_" || c.substr(0, 7) == "THRUST_") return true;
    if (c.size() > 2 && c.substr(0, 2) == "__") {
        for (char ch : c.substr(2))
            if (!std::isdigit(static_cast<unsigned char>(ch))) return false;
        return true;
    }
    return false;
}

}  // namespace

bool isToolkitHeaderCode(std::string_view file, std::string_view function)
{
    if (!file.empty()) {
        for (std::string_view p : {"/include/cccl/", "/include/thrust/", "/include/cub/", "/include/cuda/", "/include/nv/",
                                   "/include/cooperative_groups", "/include/crt/", "/libcudacxx/include/", "/cub/cub/",
                                   "/thrust/thrust/"})
            if (contains(file, p)) return true;
        // <toolkit>/include/x.h: /usr/local/cuda-13.0/include/, /usr/local/cuda/targets/x86_64-linux/include/
        const size_t inc = file.find("/include/");
        if (inc != std::string_view::npos) {
            const std::string_view parent = componentBefore(file, inc);
            if (isVersionDir(parent)) return true;
            const size_t up = inc - parent.size() - 1;
            if (up != std::string_view::npos && up > 0 && componentBefore(file, up) == "targets") return true;
        }
        return false;
    }
    // No line information: CCCL's versioned namespaces are its own.
    const std::string_view head = function.substr(0, function.find('('));
    for (std::string_view p : {"cub::CUB_", "thrust::THRUST_", "cuda::std::__"}) {
        const size_t at = head.find(p);
        if (at == std::string_view::npos) continue;
        // The qualified name, not a template argument: at depth 0 and at the start or after the return type.
        int depth = 0;
        for (size_t i = 0; i < at; ++i) depth += head[i] == '<' ? 1 : head[i] == '>' ? -1 : 0;
        if (depth == 0 && (at == 0 || head[at - 1] == ' ' || head[at - 1] == '*' || head[at - 1] == '&')) return true;
    }
    return false;
}

std::string toolkitCallOf(std::string_view file, std::string_view function)
{
    if (function.empty() || !isToolkitHeaderCode(file, function)) return {};
    // The runtime's own inline wrappers (cudaFuncGetAttributes<T>, a launch helper): the CUDA call they
    // make is named already.
    if (contains(file, "/cuda_runtime") || contains(file, "/crt/")) return {};
    // The arguments go (the first '(' outside template arguments), then template arguments, then the
    // return type (what is left before the last space), then the versioned namespaces.
    size_t paren = std::string_view::npos;
    int depth = 0;
    for (size_t i = 0; i < function.size(); ++i) {
        const char c = function[i];
        if (c == '<') ++depth;
        else if (c == '>') --depth;
        else if (c == '(' && depth == 0) {
            paren = i;
            break;
        }
    }
    std::string name = withoutTemplateArgs(function.substr(0, paren));
    if (const size_t sp = name.rfind(' '); sp != std::string::npos) name = name.substr(sp + 1);
    while (!name.empty() && (name[0] == '*' || name[0] == '&')) name.erase(0, 1);
    std::string out;
    size_t start = 0;
    while (start <= name.size()) {
        size_t end = name.find("::", start);
        const std::string_view part = std::string_view(name).substr(start, end == std::string::npos ? std::string::npos : end - start);
        if (!part.empty() && !isVersionNamespace(part)) out += (out.empty() ? "" : "::") + std::string(part);
        if (end == std::string::npos) break;
        start = end + 2;
    }
    if (out.empty()) return {};
    std::string_view lib = "CUDA headers";
    if (out.rfind("cub::", 0) == 0) lib = "CUB";
    else if (out.rfind("thrust::", 0) == 0) lib = "thrust";
    else if (out.rfind("cooperative_groups::", 0) == 0) lib = "cooperative groups";
    else if (out.rfind("cuda::", 0) == 0) lib = "libcu++";
    return out + " (" + std::string(lib) + ")";
}

bool isStaticRuntimeInternal(std::string_view function)
{
    for (std::string_view p : {"libcudart_static_", "__cudart", "cudart::"})
        if (function.substr(0, p.size()) == p) return true;
    return false;
}

std::string pythonPackageOf(std::string_view file)
{
    for (std::string_view root : kPackageRoots) {
        const size_t at = file.find(root);
        if (at == std::string_view::npos) continue;
        const size_t b = at + root.size(), e = file.find_first_of("/.", b);
        return std::string(file.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    }
    return "python";
}

bool isInstalledPython(std::string_view file)
{
    if (file.empty()) return false;
    for (std::string_view root : kPackageRoots)
        if (contains(file, root)) return true;
    if (file.front() == '<') return contains(file, "frozen");  // <frozen importlib._bootstrap>; not <stdin> or <string>
    // The standard library: .../lib/python3.11/x.py (not a package below it: those are site-packages).
    const size_t at = file.find("/lib/python");
    if (at == std::string_view::npos) return false;
    size_t i = at + 11;
    while (i < file.size() && (std::isdigit(static_cast<unsigned char>(file[i])) || file[i] == '.')) ++i;
    return i < file.size() && file[i] == '/' && i > at + 11;
}

std::string functionBase(std::string_view f)
{
    std::string_view s = f.substr(0, f.find('('));
    // "void foo<int>" -> "foo<int>": a demangled template function carries its return type.
    const size_t space = s.rfind(' ');
    return std::string(space == std::string_view::npos ? s : s.substr(space + 1));
}

bool isRuntimeEntryPoint(std::string_view function, std::string_view file)
{
    const std::string base = functionBase(function);
    return base.size() > 4 && base.compare(0, 4, "cuda") == 0 && std::isupper(static_cast<unsigned char>(base[4])) &&
           (file.empty() || contains(file, "/cuda_runtime"));
}

bool isLibraryFrame(std::string_view module, std::string_view function, std::string_view file,
                    const std::function<bool(const std::string&)>& kernelStub)
{
    if (isLibraryModule(module)) return true;
    auto startsWith = [](std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; };
    if (!function.empty()) {
        // libcudart_static_<hash>: the static runtime's internal functions, as its symbol table names them.
        for (std::string_view p : {"cudart::", "__cudart", "__device_stub_", "__cuda", "gpuspy::", "libcudart_static_",
                                   "_start", "__libc_start"})
            if (startsWith(function, p)) return true;
        if (isRuntimeEntryPoint(function, file)) return true;
        if (kernelStub && kernelStub(functionBase(function))) return true;          // the host stub nvcc names after the kernel
        if (!libraryCallOf("", function).empty()) return true;  // a library's C API linked in (ncclAllReduce)
    }
    for (std::string_view p : {".cudafe1.stub.c", "/cuda_runtime.h", "/cuda_runtime_api.h", "/crt/"})
        if (contains(file, p)) return true;
    // CUB, thrust, libcu++ inlined into the user's file: the site is the user's line that called them.
    return isToolkitHeaderCode(file, function);
}

}  // namespace gpuspy::collect
