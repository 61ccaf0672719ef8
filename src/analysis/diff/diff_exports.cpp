#include "perfscope/analysis/diff/diff_exports.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "analysis/exporters/exporter_common.hpp"
#include "analysis/exporters/flame_graph_svg.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace perfscope {

namespace {

struct Counts {
  std::uint64_t base = 0, current = 0;
};

// Both profiles' folded stacks (write_folded's text: one naming of frames for every folded
// output), keyed by the stack.
std::map<std::string, Counts> folded_union(const Profile& base, const Profile& current) {
  std::map<std::string, Counts> stacks;
  auto add = [&](const Profile& profile, bool is_base) {
    std::ostringstream text;
    write_folded(profile, text);
    std::istringstream in(text.str());
    for (std::string line; std::getline(in, line);) {
      auto space = line.rfind(' ');
      if (space == std::string::npos) continue;
      std::uint64_t count = std::stoull(line.substr(space + 1));
      Counts& counts = stacks[line.substr(0, space)];
      (is_base ? counts.base : counts.current) += count;
    }
  };
  add(base, true);
  add(current, false);
  return stacks;
}

}  // namespace

Profile profile_of_event(Profile profile, std::uint32_t event) {
  std::erase_if(profile.samples, [&](const ProfileSample& s) { return s.event != event; });
  std::erase_if(profile.sample_groups,
                [&](const ProfileSampleGroup& g) { return g.event != event; });
  for (std::uint32_t e = 0; e < profile.events.size(); ++e) {
    if (e != event) profile.events[e].samples = profile.events[e].period = 0;
  }
  return profile;
}

void write_diff_folded(const Profile& base, const Profile& current, std::ostream& out) {
  export_detail::TextSink sink(out);
  for (const auto& [stack, counts] : folded_union(base, current)) {
    sink.append(stack);
    sink.format(" {} {}\n", counts.base, counts.current);
  }
  sink.finish();
}

void write_diff_flame_graph_svg(const Profile& base, const Profile& current, std::ostream& out,
                                const std::string& base_name, const std::string& current_name) {
  using export_detail::FlameNode;
  using export_detail::FlameTree;
  using export_detail::FrameKind;
  using export_detail::Rgb;
  FlameTree tree;
  std::uint64_t base_total = 0, base_not_drawn = 0;
  for (const auto& [stack, counts] : folded_union(base, current)) {
    base_total += counts.base;
    // BASE's stacks that NEW lacks still count in their callers' BASE shares; their own frames
    // have no width, so they are not drawn.
    if (counts.current == 0) base_not_drawn += counts.base;
    std::uint32_t node = 0;
    tree.nodes[0].samples += counts.current;
    tree.nodes[0].base_samples += counts.base;
    std::size_t start = 0;
    while (start <= stack.size()) {
      std::size_t end = stack.find(';', start);
      if (end == std::string::npos) end = stack.size();
      node = tree.child(node, tree.label(stack.substr(start, end - start), FrameKind::other));
      tree.nodes[node].samples += counts.current;
      tree.nodes[node].base_samples += counts.base;
      start = end + 1;
    }
  }
  std::uint64_t current_total = tree.nodes[0].samples;
  auto share = [](std::uint64_t part, std::uint64_t total) {
    return total == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(total);
  };
  auto delta = [&](const FlameNode& node) {
    return share(node.samples, current_total) - share(node.base_samples, base_total);
  };
  double largest = 0;
  for (const auto& node : tree.nodes) largest = std::max(largest, std::fabs(delta(node)));

  export_detail::FlameGraphLook look;
  look.title = "Differential Flame Graph";
  look.subtitle = fmt::format(
      "{} ({} samples) against {} ({} samples): widths are NEW's samples, colours the change of "
      "share (red: more, blue: less)",
      current_name, current_total, base_name, base_total);
  if (base_not_drawn != 0) {
    look.subtitle += fmt::format("; {:.2f} % of BASE is on stacks NEW lacks (not drawn)",
                                 share(base_not_drawn, base_total));
  }
  // White for no change, full red or blue for the largest change of the graph.
  auto colour_of = [largest](double change) {
    double strength = largest == 0 ? 0.0 : std::min(1.0, std::fabs(change) / largest);
    int fade = static_cast<int>(std::lround(235 - 200 * strength));
    return change >= 0 ? Rgb{255, fade, fade} : Rgb{fade, fade, 255};
  };
  look.legend = {{colour_of(largest), fmt::format("+{:.1f} pts", largest)},
                 {colour_of(0), "unchanged"},
                 {colour_of(-largest), fmt::format("-{:.1f} pts", largest)}};
  look.colour = [&](const FlameTree&, const FlameNode& node) { return colour_of(delta(node)); };
  look.details = [&](const FlameNode& node, std::uint64_t) {
    return fmt::format("{} samples, {:.2f} %; BASE {:.2f} %, {:+.2f} pts", node.samples,
                       share(node.samples, current_total), share(node.base_samples, base_total),
                       delta(node));
  };
  export_detail::write_flame_tree_svg(tree, look, out);
}

}  // namespace perfscope
