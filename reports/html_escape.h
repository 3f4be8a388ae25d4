// Escaping text for HTML and SVG, shared by every report that writes markup.
#pragma once
#include <string>
#include <string_view>

namespace shardline {

// Escapes &, <, >, " and ' for HTML/SVG text and attributes.
std::string html_escape(std::string_view text);

}  // namespace shardline
