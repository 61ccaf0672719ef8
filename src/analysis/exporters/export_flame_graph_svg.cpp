// A flame graph in one SVG file with no external resources: the root ("all") at the bottom, then
// the command (and, with several events, the event first), then call stacks from the outermost
// caller up; frames of one name under one parent merge, siblings sorted by name, widths by
// sample count. Each frame is a <g class="f"> holding its <title> ("name (N samples, P %)"),
// <rect> and <text>, with its place in data-s (first sample), data-n (samples) and data-d
// (depth) for the embedded script: click a frame to zoom to it, "Reset zoom" to go back,
// "Search" (or Ctrl-F) to highlight frames matching a regular expression and show the share
// of samples under them. Colours say what a frame is: user code (warm), inlined user code
// (aqua), kernel (blue), unresolved (grey). Frames narrower than 0.1 pixel at full width are
// left out, as flamegraph.pl does, so that huge profiles stay a manageable file.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/exporters/exporter_common.hpp"
#include "analysis/exporters/flame_graph_svg.hpp"
#include "perfscope/analysis/exporters/profile_exporters.hpp"

namespace perfscope {

namespace export_detail {

namespace {

constexpr double image_width = 1200;
constexpr double padding = 10;
constexpr double frame_height = 16;
constexpr double header_height = 70;  // with a subtitle of one line
constexpr double subtitle_line_height = 16;
constexpr double footer_height = 34;
// What a character takes in the fonts browsers use for 12 px monospace (DejaVu Sans Mono:
// 7.22 px in Chromium), with a margin: labels are cut to fit their frames by it (here and in the
// page's script, which reads it from data-char) and long subtitles wrap by it.
constexpr double char_width = 7.3;
constexpr double min_frame_width = 0.1;

// The bytes of the first `characters` characters of `text` (a UTF-8 sequence is one): labels and
// lines are cut between characters, never inside one.
std::size_t prefix_bytes(std::string_view text, std::size_t characters) {
  std::size_t end = 0;
  for (std::size_t counted = 0; end < text.size() && counted < characters; ++counted) {
    ++end;
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) ++end;
  }
  return end;
}

// `text` in lines of at most `width` characters, broken at spaces; a word longer than a line is
// cut between characters.
std::vector<std::string_view> wrapped_lines(std::string_view text, std::size_t width) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    std::size_t end = prefix_bytes(text, width);
    if (end < text.size()) {
      std::size_t space = text.rfind(' ', end);
      if (space != std::string_view::npos && space > 0) end = space;
    }
    lines.push_back(text.substr(0, end));
    text.remove_prefix(end);
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  }
  return lines;
}

}  // namespace

Rgb hsl_to_rgb(double hue, double saturation, double lightness) {
  double c = (1 - std::fabs(2 * lightness - 1)) * saturation;
  double h = std::fmod(hue, 360.0) / 60.0;
  double x = c * (1 - std::fabs(std::fmod(h, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (h < 1) {
    r = c, g = x;
  } else if (h < 2) {
    r = x, g = c;
  } else if (h < 3) {
    g = c, b = x;
  } else if (h < 4) {
    g = x, b = c;
  } else if (h < 5) {
    r = x, b = c;
  } else {
    r = c, b = x;
  }
  double m = lightness - c / 2;
  auto channel = [m](double v) { return static_cast<int>(std::lround((v + m) * 255)); };
  return {channel(r), channel(g), channel(b)};
}

namespace {

// A stable colour per name inside the kind's band of hues, so neighbours differ.
Rgb frame_colour(std::string_view name, FrameKind kind) {
  std::uint32_t hash = 2166136261u;
  for (char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  double v = static_cast<double>(hash % 1000) / 1000.0;
  switch (kind) {
    case FrameKind::user: return hsl_to_rgb(8 + 44 * v, 0.85, 0.58);
    case FrameKind::inlined: return hsl_to_rgb(172 + 20 * v, 0.55, 0.55);
    case FrameKind::kernel: return hsl_to_rgb(205 + 30 * v, 0.60, 0.66);
    case FrameKind::unknown: return hsl_to_rgb(0, 0, 0.68 + 0.1 * v);
    case FrameKind::other: break;
  }
  return hsl_to_rgb(35, 0.18, 0.72 + 0.06 * v);
}

// Unresolved addresses of one DSO are one frame, "[libc.so.6]", as in folded stacks: a box per
// address would split their time into slivers too narrow to read.
std::string frame_name(const Profile& profile, const ProfileFrame& frame) {
  const ProfileFunction& function = profile.functions[frame.function];
  if (function.resolved || function.dso == no_index) return function.name;
  // Built with append, not "[" + name + "]": GCC 12 at -O3 reports a false -Wrestrict in
  // std::string's operator+.
  std::string name = "[";
  name.append(detail::short_dso_name(profile.dsos[function.dso].path)).append("]");
  return name;
}

FrameKind kind_of(const Profile& profile, const ProfileFrame& frame) {
  if (frame.kernel) return FrameKind::kernel;
  if (!profile.functions[frame.function].resolved) return FrameKind::unknown;
  return frame.inlined ? FrameKind::inlined : FrameKind::user;
}

constexpr std::string_view script = R"js(
(function () {
  var svg = document.documentElement;
  var W = +svg.getAttribute('data-width'), PAD = +svg.getAttribute('data-pad');
  var TOTAL = +svg.getAttribute('data-total'), CHAR = +svg.getAttribute('data-char'), MATCH = 'rgb(224,0,224)';
  var frames = Array.prototype.slice.call(document.getElementsByClassName('f'));
  var details = document.getElementById('details'), matched = document.getElementById('matched');
  var root = frames[0];
  function num(g, name) { return parseFloat(g.getAttribute(name)); }
  function part(g, tag) { return g.getElementsByTagName(tag)[0]; }
  function nameOf(g) {
    var title = part(g, 'title').textContent, cut = title.lastIndexOf(' (');
    return cut < 0 ? title : title.substring(0, cut);
  }
  function place(g, x, w) {
    var rect = part(g, 'rect'), text = part(g, 'text'), name = Array.from(nameOf(g));
    rect.setAttribute('x', x.toFixed(2));
    rect.setAttribute('width', w.toFixed(2));
    text.setAttribute('x', (x + 3).toFixed(2));
    var fits = Math.floor((w - 6) / CHAR);
    // Characters (code points), as the exporter counts them: a pair of surrogates is one.
    text.textContent = fits < 3 ? '' : name.length <= fits ? name.join('') : name.slice(0, fits - 2).join('') + '..';
  }
  function zoom(target) {
    var s = num(target, 'data-s'), n = num(target, 'data-n'), d = num(target, 'data-d');
    if (n === 0) return;  // an empty profile's root: nothing to spread over the width
    var scale = (W - 2 * PAD) / n;
    frames.forEach(function (g) {
      var gs = num(g, 'data-s'), gn = num(g, 'data-n'), gd = num(g, 'data-d');
      if (gd >= d && gs >= s && gs + gn <= s + n) {
        g.style.display = '';
        g.classList.remove('above');
        place(g, PAD + (gs - s) * scale, gn * scale);
      } else if (gd < d && gs <= s && gs + gn >= s + n) {
        g.style.display = '';
        g.classList.add('above');
        place(g, PAD, W - 2 * PAD);
      } else {
        g.style.display = 'none';
      }
    });
  }
  function clearSearch() {
    frames.forEach(function (g) {
      var rect = part(g, 'rect');
      rect.setAttribute('fill', rect.getAttribute('data-fill'));
    });
    matched.textContent = '';
  }
  function search(term) {
    var pattern;
    try { pattern = new RegExp(term); } catch (e) { alert('Not a regular expression: ' + term); return; }
    var spans = [];
    frames.forEach(function (g) {
      var rect = part(g, 'rect');
      if (pattern.test(nameOf(g))) {
        rect.setAttribute('fill', MATCH);
        spans.push([num(g, 'data-s'), num(g, 'data-s') + num(g, 'data-n')]);
      } else {
        rect.setAttribute('fill', rect.getAttribute('data-fill'));
      }
    });
    // Nested matches cover the same samples: count the union of their sample ranges.
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, reach = -1;
    spans.forEach(function (span) {
      var from = Math.max(span[0], reach);
      if (span[1] > from) { covered += span[1] - from; reach = span[1]; }
    });
    var said = 'Matched: ' + (100 * covered / TOTAL).toFixed(2) + ' % of samples (';
    var shown = Array.from(term), room = +matched.getAttribute('data-room') - said.length - 1;
    if (shown.length > room) shown = shown.slice(0, Math.max(room - 2, 0)).concat(['..']);
    matched.textContent = said + shown.join('') + ')';
  }
  function askSearch() {
    var term = prompt('Highlight frames matching (regular expression):', '');
    if (term) search(term);
  }
  frames.forEach(function (g) {
    g.addEventListener('click', function () { zoom(g); });
    g.addEventListener('mouseover', function () { details.textContent = part(g, 'title').textContent; });
    g.addEventListener('mouseout', function () { details.textContent = ' '; });
  });
  document.getElementById('reset').addEventListener('click', function () { zoom(root); });
  document.getElementById('search').addEventListener('click', askSearch);
  document.getElementById('clear').addEventListener('click', clearSearch);
  window.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); askSearch(); }
    else if (e.key === 'Escape') { clearSearch(); }
  });
})();
)js";

}  // namespace

FlameTree::FlameTree() : nodes(1) { nodes[0].label = label("all", FrameKind::other); }

std::uint32_t FlameTree::label(std::string name, FrameKind kind) {
  std::string key = name;
  key.push_back(static_cast<char>('0' + static_cast<int>(kind)));
  auto [it, added] =
      label_index_.try_emplace(std::move(key), static_cast<std::uint32_t>(names.size()));
  if (added) {
    names.push_back(std::move(name));
    kinds.push_back(kind);
  }
  return it->second;
}

std::uint32_t FlameTree::child(std::uint32_t parent, std::uint32_t label) {
  auto [it, added] = child_of_.try_emplace(std::uint64_t{parent} << 32 | label,
                                           static_cast<std::uint32_t>(nodes.size()));
  if (added) {
    std::uint32_t depth = nodes[parent].depth + 1;
    nodes.push_back(FlameNode{label, depth, 0, 0, {}, 0});
    nodes[parent].children.push_back(it->second);
  }
  return it->second;
}

}  // namespace export_detail

using export_detail::FlameGraphLook;
using export_detail::FlameNode;
using export_detail::FlameTree;
using export_detail::FrameKind;
using export_detail::Rgb;

void write_flame_graph_svg(const Profile& profile, std::ostream& out) {
  bool event_roots = export_detail::events_with_samples(profile) > 1;

  // Samples per (stack, thread, event) first: the tree is built once per distinct stack.
  std::unordered_map<std::uint64_t, std::uint64_t> counts;
  std::vector<std::uint64_t> count_keys;
  std::size_t event_count = std::max<std::size_t>(profile.events.size(), 1);
  std::size_t thread_events = profile.threads.size() * event_count;
  export_detail::for_each_sample_group(profile, [&](const ProfileSampleGroup& group) {
    std::uint64_t thread_event = group.thread * event_count + (event_roots ? group.event : 0);
    std::uint64_t key =
        std::uint64_t{group.stack == no_index ? 0u : group.stack + 1} * thread_events +
        thread_event;
    counts[key] += group.samples;
  });

  FlameTree tree;
  std::vector<FlameNode>& nodes = tree.nodes;
  auto child = [&](std::uint32_t parent, std::uint32_t label) { return tree.child(parent, label); };
  std::vector<std::uint32_t> frame_label(profile.frames.size(), no_index);
  std::vector<std::uint32_t> chain;
  for (const auto& [key, count] : counts) {
    std::uint64_t stack_plus_one = key / thread_events;
    std::uint64_t thread_event = key % thread_events;
    std::uint32_t node = 0;
    nodes[0].samples += count;
    if (event_roots) {
      std::size_t event = thread_event % event_count;
      node = child(node,
                   tree.label(event < profile.events.size() ? "[" + profile.events[event].name + "]"
                                                            : std::string("[?]"),
                              FrameKind::other));
      nodes[node].samples += count;
    }
    const ProfileThread& thread = profile.threads[thread_event / event_count];
    node =
        child(node, tree.label(thread.comm.empty() ? "[unknown]" : thread.comm, FrameKind::other));
    nodes[node].samples += count;
    chain.clear();
    if (stack_plus_one != 0) {
      for (auto s = static_cast<std::uint32_t>(stack_plus_one - 1); s != no_index;
           s = profile.stacks[s].parent) {
        chain.push_back(profile.stacks[s].frame);
      }
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (frame_label[*it] == no_index) {
        const ProfileFrame& frame = profile.frames[*it];
        frame_label[*it] = tree.label(export_detail::frame_name(profile, frame),
                                      export_detail::kind_of(profile, frame));
      }
      node = child(node, frame_label[*it]);
      nodes[node].samples += count;
    }
  }

  FlameGraphLook look;
  std::string subtitle = fmt::format("{} samples", nodes[0].samples);
  for (const auto& event : profile.events) {
    if (event.samples != 0) subtitle += fmt::format(", {} ({} samples)", event.name, event.samples);
  }
  if (!profile.summary.command_line.empty()) subtitle += " of " + profile.summary.command_line;
  look.subtitle = std::move(subtitle);
  // Legend of the colours.
  for (const auto& [kind, name] :
       {std::pair{FrameKind::user, "user"}, std::pair{FrameKind::inlined, "inlined"},
        std::pair{FrameKind::kernel, "kernel"}, std::pair{FrameKind::unknown, "unresolved"}}) {
    look.legend.emplace_back(export_detail::frame_colour(name, kind), name);
  }
  look.colour = [](const FlameTree& t, const FlameNode& node) {
    return export_detail::frame_colour(t.names[node.label], t.kinds[node.label]);
  };
  look.details = [](const FlameNode& node, std::uint64_t total) {
    return fmt::format("{} samples, {:.2f} %", node.samples,
                       100.0 * static_cast<double>(node.samples) / static_cast<double>(total));
  };
  export_detail::write_flame_tree_svg(tree, look, out);
}

namespace export_detail {

void write_flame_tree_svg(FlameTree& tree, const FlameGraphLook& look, std::ostream& out) {
  std::vector<FlameNode>& nodes = tree.nodes;
  // Layout: siblings by name, each child starting where the previous one ended.
  std::uint32_t max_depth = 0;
  std::vector<std::uint32_t> order;  // depth-first, parents before children
  std::vector<std::uint32_t> pending{0};
  while (!pending.empty()) {
    std::uint32_t n = pending.back();
    pending.pop_back();
    order.push_back(n);
    FlameNode& node = nodes[n];
    max_depth = std::max(max_depth, node.depth);
    std::sort(node.children.begin(), node.children.end(), [&](std::uint32_t a, std::uint32_t b) {
      return tree.names[nodes[a].label] < tree.names[nodes[b].label];
    });
    std::uint64_t start = node.start;
    for (std::uint32_t c : node.children) {
      nodes[c].start = start;
      start += nodes[c].samples;
    }
    for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) pending.push_back(*it);
  }

  std::uint64_t total = std::max<std::uint64_t>(nodes[0].samples, 1);
  double usable = image_width - 2 * padding;
  std::vector<std::string_view> subtitle = wrapped_lines(
      look.subtitle, static_cast<std::size_t>((image_width - 2 * padding) / char_width));
  // The lines below the first push the buttons and the legend down.
  double extra =
      static_cast<double>(std::max<std::size_t>(subtitle.size(), 1) - 1) * subtitle_line_height;
  double height = header_height + extra + (max_depth + 1) * frame_height + footer_height;
  double bottom = height - footer_height;

  using export_detail::TextSink;
  TextSink sink(out);
  sink.format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" data-width=\"{0}\" data-pad=\"{2}\" data-total=\"{3}\" "
      "data-char=\"{4}\">\n",
      image_width, height, padding, total, char_width);
  sink.append(
      "<style>\n"
      "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
      ".f { cursor: pointer; }\n"
      ".f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
      ".above rect { opacity: 0.55; }\n"
      ".button { cursor: pointer; fill: #1a4d80; text-decoration: underline; }\n"
      ".title { font-size: 17px; text-anchor: middle; }\n"
      "</style>\n");
  sink.format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#f8f8f4\"/>\n", image_width,
              height);
  sink.format("<text class=\"title\" x=\"{}\" y=\"24\">", image_width / 2);
  sink.xml_text(look.title);
  sink.append("</text>\n");
  for (std::size_t line = 0; line < subtitle.size(); ++line) {
    sink.format("<text x=\"{}\" y=\"{}\">", padding,
                44 + static_cast<double>(line) * subtitle_line_height);
    sink.xml_text(subtitle[line]);
    sink.append("</text>\n");
  }
  double legend_x = image_width - padding - static_cast<double>(look.legend.size()) * 95;
  // The search result's room, in characters, before the legend: the script shortens a long
  // search term to it.
  double matched_x = padding + 210;
  auto matched_room =
      static_cast<int>(std::max(0.0, std::floor((legend_x - 10 - matched_x) / char_width)));
  sink.format(
      "<text id=\"reset\" class=\"button\" x=\"{0}\" y=\"{4}\">Reset zoom</text>\n"
      "<text id=\"search\" class=\"button\" x=\"{1}\" y=\"{4}\">Search</text>\n"
      "<text id=\"clear\" class=\"button\" x=\"{2}\" y=\"{4}\">Clear</text>\n"
      "<text id=\"matched\" x=\"{3}\" y=\"{4}\" data-room=\"{5}\"></text>\n",
      padding, padding + 90, padding + 150, matched_x, 62 + extra, matched_room);
  for (const auto& [colour, name] : look.legend) {
    sink.format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"rgb({},{},{})\"/>"
        "<text x=\"{}\" y=\"{}\">",
        legend_x, 52 + extra, colour.r, colour.g, colour.b, legend_x + 16, 62 + extra);
    sink.xml_text(name);
    sink.append("</text>\n");
    legend_x += 95;
  }

  sink.append("<g id=\"frames\">\n");
  std::string text;
  for (std::uint32_t n : order) {
    const FlameNode& node = nodes[n];
    // The root spans the image even without samples: "all (0 samples)" says why it is empty.
    double width =
        n == 0 ? usable : static_cast<double>(node.samples) / static_cast<double>(total) * usable;
    // A child is never wider than its parent, so no frame is shown above a left-out one.
    if (width < min_frame_width && n != 0) continue;
    const std::string& name = tree.names[node.label];
    double x = padding + static_cast<double>(node.start) / static_cast<double>(total) * usable;
    double y = bottom - (node.depth + 1) * frame_height;
    Rgb colour = look.colour(tree, node);
    sink.format("<g class=\"f\" data-s=\"{}\" data-n=\"{}\" data-d=\"{}\"><title>", node.start,
                node.samples, node.depth);
    sink.xml_text(name);
    sink.append(" (");
    sink.xml_text(look.details(node, total));
    sink.append(")</title>");
    sink.format(
        "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" rx=\"2\" ry=\"2\" "
        "fill=\"rgb({},{},{})\" data-fill=\"rgb({},{},{})\"/>",
        x, y, width, frame_height - 1, colour.r, colour.g, colour.b, colour.r, colour.g, colour.b);
    auto fits = static_cast<std::size_t>(std::max(0.0, std::floor((width - 6) / char_width)));
    text.clear();
    if (fits >= 3) {
      text = prefix_bytes(name, fits) == name.size()
                 ? name
                 : std::string(name, 0, prefix_bytes(name, fits - 2)) + "..";
    }
    sink.format("<text x=\"{:.2f}\" y=\"{}\">", x + 3, y + frame_height - 4);
    sink.xml_text(text);
    sink.append("</text></g>\n");
  }
  sink.append("</g>\n");
  sink.format("<text id=\"details\" x=\"{}\" y=\"{}\"> </text>\n", padding,
              height - footer_height / 2 + 4);
  sink.append("<script type=\"text/ecmascript\"><![CDATA[");
  sink.append(script);
  sink.append("]]></script>\n</svg>\n");
  sink.finish();
}

}  // namespace export_detail

}  // namespace perfscope
