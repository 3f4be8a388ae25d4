// The self-contained HTML report of one run (no network, no external scripts or styles): the
// summary table and an inline SVG timeline of the slowest rank's reported step with its memory.
#pragma once
#include <string>

#include "core/metrics.h"
#include "core/scenario.h"
#include "core/timeline.h"

namespace shardline {

// `extra_html`: a section placed after the summary (every-rank runs: the per-rank section).
std::string html_report(const Scenario& scenario, const Timeline& timeline, const Metrics& metrics,
                        const std::string& extra_html = "");

// A complete HTML page with the report's inline style around `body_html` (already escaped),
// for other reports (compare, sweep) that want the same look.
std::string html_page(const std::string& title, const std::string& body_html);

}  // namespace shardline
