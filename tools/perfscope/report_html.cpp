#include "report_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "perfscope/analysis/annotate/annotation_output.hpp"
#include "perfscope/analysis/annotate/annotator.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/view/profile_view.hpp"
#include "viewer_assets.hpp"

namespace perfscope::cli {

namespace {

// JSON text made safe inside a <script> element: a "<" (only ever inside a JSON string, such as
// a hostile process name "</script><script>...") becomes \u003c.
std::string script_safe(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

// The names of event `event`'s hottest functions by their own samples, those with at least
// html_annotated_min_share of the event (a function of one sample can weigh a megabyte of
// instructions in the page).
std::vector<std::string> hottest_functions(const Profile& profile, std::uint32_t event,
                                           std::size_t count) {
  std::vector<std::uint64_t> self(profile.functions.size(), 0);
  std::uint64_t total = 0;
  for (const ProfileSampleGroup& group : profile.sample_groups) {
    if (group.event != event) continue;
    total += group.period;
    if (group.stack == no_index) continue;
    self[profile.frames[profile.stacks[group.stack].frame].function] += group.period;
  }
  const auto least =
      static_cast<std::uint64_t>(html_annotated_min_share * static_cast<double>(total));
  std::vector<std::uint32_t> order(self.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return self[a] != self[b] ? self[a] > self[b] : a < b;
  });
  std::vector<std::string> names;
  for (std::uint32_t index : order) {
    if (names.size() == count || self[index] == 0 || self[index] < least) break;
    const ProfileFunction& function = profile.functions[index];
    if (!function.resolved) continue;  // an address: no code to show by name
    if (std::find(names.begin(), names.end(), function.name) == names.end()) {
      names.push_back(function.name);
    }
  }
  return names;
}

}  // namespace

void write_report_html(const PerfDataReader& reader, Profile profile, const std::string& name,
                       std::ostream& out) {
  ProfileView view(std::move(profile));
  const Profile& kept = view.profile();
  // The page selects ranges and filters from this table; without it (a recording too varied
  // for the page) it holds each event's whole-recording answers.
  std::string table = view.sample_table_json(html_max_table_cells);
  const bool has_table = table != "{}";
  std::string data = fmt::format(
      "{{\"files\":{{\"base\":{},\"current\":null}},\"summary\":{},\"annotated\":{},"
      "\"table\":{},\"events\":[",
      json_quoted(name), view.summary_json(), html_annotated_functions, table);
  for (std::uint32_t event = 0; event < kept.events.size(); ++event) {
    ViewSelection selection;
    selection.event = event;
    ViewTreeOptions inverted;
    inverted.inverted = true;
    std::string functions = "null";
    std::vector<std::string> names = hottest_functions(kept, event, html_annotated_functions);
    if (!names.empty()) {
      AnnotateOptions options;
      options.symbols = names;
      options.profile.filter.event = event;
      try {
        functions = annotation_json(annotate(reader, options));
      } catch (const std::exception&) {
        // A function whose code cannot be read here (its file changed): the page says the
        // function pane has nothing for it.
      }
    }
    if (has_table) {
      data += fmt::format("{}{{\"functions\":{}}}", event == 0 ? "" : ",", functions);
    } else {
      data += fmt::format("{}{{\"tree\":{},\"bottom_up\":{},\"timeline\":{},\"functions\":{}}}",
                          event == 0 ? "" : ",", view.tree_json(selection, {}),
                          view.tree_json(selection, inverted), view.timeline_json(selection, 400),
                          functions);
    }
  }
  data += "]}";

  // The application's page with its style and script inline, and the data before the script.
  std::string page(viewer_assets::index_html);
  auto replace = [&page](std::string_view what, const std::string& with) {
    std::size_t at = page.find(what);
    if (at == std::string::npos) {
      throw std::logic_error(fmt::format("the viewer's index.html lacks {}", what));
    }
    page.replace(at, what.size(), with);
  };
  replace("<link rel=\"stylesheet\" href=\"app.css\">",
          "<style>\n" + std::string(viewer_assets::app_css) + "</style>");
  replace("<script src=\"page_table.js\" defer></script>\n", "");
  replace("<script src=\"app.js\" defer></script>\n", "");
  replace("</body>", "<script id=\"embedded-profile\" type=\"application/json\">" +
                         script_safe(data) + "</script>\n<script>\n" +
                         std::string(viewer_assets::page_table_js) + "</script>\n<script>\n" +
                         std::string(viewer_assets::app_js) + "</script>\n</body>");
  out.write(page.data(), static_cast<std::streamsize>(page.size()));
}

}  // namespace perfscope::cli
