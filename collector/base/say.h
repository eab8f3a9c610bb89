// collector/base/say.h: gpuspy's messages on stderr, written so that a failed write never throws: with its
// terminal hung up or its reader gone (an ssh session that ended), `record` and `collect` must still
// finish their capture, where fmt::print would throw (EIO, EPIPE) out of the collecting loop.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <utility>

namespace gpuspy::collect {

template <typename... T>
void say(fmt::format_string<T...> format, T&&... args)
{
    try {
        const std::string s = fmt::format(format, std::forward<T>(args)...);
        [[maybe_unused]] size_t n = std::fwrite(s.data(), 1, s.size(), stderr);
        std::fflush(stderr);
    } catch (...) {
        // Out of memory while formatting a message: the message is lost, the capture is not.
    }
}

}  // namespace gpuspy::collect
