// Program <-> JSON (program.json, fed to sim and exec alike) and the readable one-line-per-op
// text that `shardline schedule` prints.
#pragma once
#include <iosfwd>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/program.h"

namespace shardline {

nlohmann::json program_to_json(const Program& program);
// Throws InputError with the JSON path for a malformed program file.
Program program_from_json(const nlohmann::json& j);
// The text, written line by line as it is made (a Program of millions of ops is not held twice).
void write_program_text(const Program& program, std::ostream& out);
std::string program_to_text(const Program& program);

}  // namespace shardline
