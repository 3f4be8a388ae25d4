#include "reports/html.h"

#include "reports/kernel_breakdown.h"
#include "reports/outputs.h"
#include "reports/svg_timeline.h"

namespace shardline {

namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:24px;color:#222}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "pre.summary{background:#f7f7f7;border:1px solid #e3e3e3;padding:12px;font-size:13px;overflow-x:auto}"
    ".scroll{overflow-x:auto}"
    "svg.timeline rect:hover{stroke:#000;stroke-width:1}"
    "p.note{font-size:12px;color:#666}";

}  // namespace

std::string html_page(const std::string& title, const std::string& body_html) {
  std::string out;
  out.reserve(body_html.size() + 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>";
  out += html_escape(title);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out += body_html;
  out += "\n</body>\n</html>\n";
  return out;
}

std::string html_report(const Scenario& scenario, const Timeline& timeline, const Metrics& metrics, const std::string& extra_html) {
  std::string body;
  body += "<h1>shardline: " + html_escape(scenario.name) + " (" + html_escape(timeline.source) + ", " + html_escape(timeline.backend) + ")</h1>\n";
  if (!scenario.description.empty()) body += "<p>" + html_escape(scenario.description) + "</p>\n";
  body += "<h2>Summary</h2>\n<pre class=\"summary\">" + html_escape(summary_table(scenario, timeline, metrics)) + "</pre>\n";
  body += extra_html;

  body += "<h2>Timeline</h2>\n";
  if (timeline.intervals.empty()) {
    body += "<p>The timeline has no op intervals.</p>\n";
  } else {
    const StepWindow window = step_window(timeline);
    SvgTimelineOptions options;
    options.title = timeline.source + " (" + timeline.backend + "), rank " + std::to_string(window.rank) + ", iteration " +
                    std::to_string(window.iteration);
    body += svg_legend() + "\n<div class=\"scroll\">" + svg_timeline(timeline, window, shared_axis({window}), options) + "</div>\n";
    body += "<p class=\"note\">Hover a rectangle for the op, its unit, bucket, bytes and duration. Ops narrower than half a "
            "pixel are merged into grey rectangles.";
    // The memory panel's key only where the drawing has one (a measured run has no memory samples).
    if (!timeline.memory.empty())
      body += std::string(" Memory: live (allocated) bytes on rank 0") +
              (timeline.memory_by_stream.empty()
                   ? ""
                   : " as the streams reach each alloc and free (the summary's peak counts them in the order the host "
                     "issues them, as PyTorch's caching allocator does, and can differ from this curve's; hover it for both)") +
              "; dashed red: capacity, dotted orange: capacity less the margin. The fit verdict in the summary judges the "
              "reserve needed (allocated plus the allocator's fragmentation at capacity, context and NCCL buffers), which "
              "lies at or above the peak.";
    body += "</p>\n";
  }
  body += kernel_breakdown_html(scenario, unit_breakdowns(scenario));
  return html_page("shardline: " + scenario.name, body);
}

}  // namespace shardline
