// collector/cli/cmd_dump.cpp: `gpuspy dump FILE`, every record of a capture or stream file as a line.
#include "collector/cli/cli.h"
#include "collector/report/dump.h"

#include <fmt/format.h>

#include <cstdio>

namespace gpuspy::collect::cli {

namespace {

constexpr const char* kUsage =
    "usage: gpuspy dump FILE\n"
    "\n"
    "Prints every record of FILE (a capture from `gpuspy record`/`gpuspy collect`, or a file the shim\n"
    "wrote alone) as one line: the process, the record's offset in its stream, its type and fields.\n"
    "Calls show the API, category, host times, stream, result and flags, then the transfer (direction,\n"
    "bytes, memory kinds), launch (kernel, grid, block) or allocation; strings are quoted and escaped.\n"
    "A damaged file is dumped up to the damage, which is then reported on stderr (exit status 1).\n"
    "\n"
    "options:\n"
    "  -h, --help   this text\n";

}  // namespace

int runDump(int argc, char** argv)
{
    ArgReader args("dump", argc, argv);
    std::string file;
    while (!args.done()) {
        if (args.flag({"-h", "--help"})) {
            fmt::print("{}", kUsage);
            return 0;
        }
        args.fileOperand(file);
    }
    if (file.empty()) throw UsageError("gpuspy dump: which file? (usage: gpuspy dump FILE)");

    ReadOptions options;
    options.keepEvents = false;  // each record is printed as it is read: memory does not grow with the capture
    uint64_t lines = 0;
    options.onRecord = [&](const Process& proc, const wire::RecordView& v) {
        const std::string line = formatRecord(proc, v);
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fputc('\n', stdout);
        ++lines;
    };
    ReadInfo info;
    Capture capture;
    try {
        capture = readCapture(file, options, &info);
    } catch (const std::exception& e) {
        std::fflush(stdout);
        fmt::print(stderr, "gpuspy dump: {}\n", e.what());
        return kExitFailure;
    }
    for (const Process& p : capture.processes)
        if (!p.streamError.empty()) fmt::print("# pid {}: stream cut short: {}\n", p.pid, p.streamError);
    fmt::print("# {} records, {} processes, {} bad streams{}\n", lines, capture.processes.size(), capture.badStreams,
               info.bareStream ? " (a stream file written by the shim)" : "");
    std::fflush(stdout);
    if (!info.damage.empty()) {
        fmt::print(stderr, "gpuspy dump: {}: {}\n", file, info.damage);
        return kExitFailure;
    }
    return 0;
}

}  // namespace gpuspy::collect::cli
