// collector/cli/output_name.cpp: a capture's name as `record -o` takes it, with nsys's patterns: %p (this
// gpuspy's pid: the capture is made before the command starts), %h (the host name), %q{VAR} (VAR's
// value, empty when unset). The shim expands GPUSPY_OUTPUT alike (shim/identity.cpp), %p there being
// the pid of the process that writes the file.
#include "collector/cli/cli.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace gpuspy::collect::cli {

std::string expandOutputName(const std::string& pattern)
{
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        if (c == '%' && next == 'p') {
            out += std::to_string(getpid());
            ++i;
        } else if (c == '%' && next == 'h') {
            char host[HOST_NAME_MAX + 1] = {0};
            if (gethostname(host, sizeof host - 1) == 0) out += host;
            ++i;
        } else if (c == '%' && next == 'q' && i + 2 < pattern.size() && pattern[i + 2] == '{' &&
                   pattern.find('}', i + 3) != std::string::npos) {
            const size_t close = pattern.find('}', i + 3);
            if (const char* v = std::getenv(pattern.substr(i + 3, close - i - 3).c_str())) out += v;
            i = close;
        } else {
            out += c;
        }
    }
    return out;
}

}  // namespace gpuspy::collect::cli
