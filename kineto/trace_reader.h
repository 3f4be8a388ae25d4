// Reads one PyTorch profiler (Kineto) Chrome-trace file, plain JSON or gzip, streamed: the JSON
// is parsed event by event (nlohmann's SAX interface over a zlib stream) and only the compact
// records of kineto/trace.h are kept, so a 1 GB trace never sits in memory whole.
#pragma once
#include <string>
#include <vector>

#include "kineto/trace.h"

namespace shardline::kineto {

// Throws InputError naming `path` when the file cannot be read, is not JSON (with the byte
// offset), is a truncated or corrupt gzip, or holds no "traceEvents".
KinetoTrace read_trace(const std::string& path);

// Every trace of `paths`, in that order, read `jobs` at a time on threads (0: one per hardware
// thread). The first failing path (in `paths` order) throws its InputError.
std::vector<KinetoTrace> read_traces(const std::vector<std::string>& paths, int jobs = 0);

// Microseconds as written in a trace ("1661203463042907", "4458677009853.422", "1.5e3") to
// integer nanoseconds, rounding beyond the third decimal to the nearest. `value`: the number
// nlohmann parsed, used when the text has an exponent.
int64_t microseconds_text_to_ns(std::string_view text, double value);

}  // namespace shardline::kineto
