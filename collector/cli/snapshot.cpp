// collector/cli/snapshot.cpp: the flight recorder's snapshot, written by the collector as a capture,
// and the control requests about the ring.
#include "collector/cli/cli.h"
#include "collector/cli/live.h"
#include "collector/ingest/ingest.h"

#include <fmt/format.h>

#include <unistd.h>

#include <stdexcept>

namespace gpuspy::collect::cli {

std::string writeSnapshot(const FlightRecorder& ring, const std::string& path, bool force)
{
    std::vector<FlightRecorder::StreamBytes> streams = ring.snapshot();
    const double seconds = double(ring.windowNs()) / 1e9;
    if (streams.empty())
        throw std::runtime_error(fmt::format("nothing in the ring: no process sent records in its last {:g} s", seconds));
    CaptureWriter writer(path, force);
    Capture capture;
    uint64_t calls = 0;
    try {
        for (const auto& s : streams) {
            const uint32_t index = writer.addStream();
            writer.writeStream(index, s.bytes.data(), s.bytes.size());
            // The definitions again, for symbolizing (stacks, modules): the events are not kept.
            StreamIngest ingest;
            ingest.setKeepRaw(false);
            ingest.setKeepEvents(false);
            ingest.feed(s.bytes.data(), s.bytes.size());
            capture.processes.push_back(std::move(ingest.process()));
            calls += s.calls;
        }
        finishCapture(capture, writer);
        if (writer.failed()) throw std::runtime_error(path + ": " + writer.error());
    } catch (...) {
        unlink(path.c_str());
        throw;
    }
    return fmt::format("wrote {}: {} process(es), {} calls from each one's last {:g} s", path, streams.size(), calls,
                       seconds);
}

std::string answerRingRequest(FlightRecorder* ring, const std::string& request)
{
    const bool snapshot = request.rfind("snapshot ", 0) == 0;
    if (!snapshot && request != "ring") return {};
    if (!ring) return "error this collector keeps no ring (start it with gpuspy collect --ring SECONDS)\n";
    if (!snapshot)
        return fmt::format("ok window_s {:g} max_bytes {} held_bytes {} held_events {} trimmed_events {} "
                           "evicted_events {} processes {}\n",
                           double(ring->windowNs()) / 1e9, ring->maxBytes(), ring->heldBytes(), ring->heldEvents(),
                           ring->trimmedEvents(), ring->evictedEvents(), ring->processes());
    // "snapshot FORCE PATH": FORCE 0 or 1, PATH absolute (the client resolved it), to the end of the line.
    const std::string rest = request.substr(9);
    if (rest.size() < 3 || (rest[0] != '0' && rest[0] != '1') || rest[1] != ' ' || rest[2] != '/')
        return "error malformed snapshot request\n";
    try {
        return "ok " + writeSnapshot(*ring, rest.substr(2), rest[0] == '1') + "\n";
    } catch (const std::exception& e) {
        return std::string("error ") + e.what() + "\n";
    }
}

}  // namespace gpuspy::collect::cli
