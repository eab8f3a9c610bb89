// collector/report/dump.h: one line of text per record, for `gpuspy dump` (debugging the shim and captures).
#pragma once

#include "collector/model/model.h"
#include "wire/codec.h"

#include <string>
#include <string_view>

namespace gpuspy::collect {

// The record as one line (no newline), using the process's definitions seen so far for names.
std::string formatRecord(const Process& proc, const wire::RecordView& record);

// Printable, one-line form of a string from a capture: control and non-ASCII bytes as \xNN, quotes escaped.
std::string escapeText(std::string_view s);

// CallFlags as "async|gpu-timed|...", or "-" when none.
std::string callFlagNames(uint16_t flags);

}  // namespace gpuspy::collect
