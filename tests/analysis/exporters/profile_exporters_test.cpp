// Over 800 lines on purpose: every text exporter checked on the one hand-made profile below, so
// that a change to the profile model shows in all of them at once (the SVG layout has its own
// file).
//
// The exporters on a hand-made Profile (two threads of one process, three-frame stacks, a kernel
// frame, an unresolved frame in a known DSO, one in no DSO, an inlined call, recorded mappings and
// a wall clock): exact folded text, speedscope and Firefox Profiler files checked against their
// formats' rules and the counts they must carry (speedscope's with its own JSON Schema, the
// Firefox Profiler's against what its importer reads), pprof parsed back and read by `go tool
// pprof`, the JSON read back into the same tables and checked with docs/profile-json.schema.json,
// the SVG parsed as XML.
#include "perfscope/analysis/exporters/profile_exporters.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "profile.pb.h"
#include "support/test_support.hpp"

namespace {

using nlohmann::json;
using perfscope::ExportFormat;
using perfscope::no_index;
using perfscope::Profile;

constexpr std::uint64_t period = 1'000'000;  // cpu-clock, 1 ms
// CLOCK_REALTIME at time 0 of the sample clock: 2023-11-14 22:13:20 UTC.
constexpr std::uint64_t wall_clock_ns = 1'700'000'000'000'000'000;
constexpr std::uint64_t kernel_text = 0xffffffff81000000;
constexpr const char* demo_build_id = "4fd8a3b2c1e0f9d87a6b5c4d3e2f1a0b9c8d7e6f";

// Stack nodes (leaf-first names after each).
enum Stack : std::uint32_t {
  s_main,           // main
  s_compute,        // compute, main
  s_helper,         // helper (inlined in compute), compute, main
  s_memcpy,         // memcpy, compute, main
  s_libc_unknown,   // [libc.so.6]+0x1139, compute, main
  s_syscall,        // do_syscall_64 [k], memcpy, compute, main
  s_unknown,        // [unknown], main
  s_compute_other,  // compute at another address, main
};

Profile make_profile() {
  Profile p;
  p.dsos = {{"/usr/bin/demo", demo_build_id, false},
            {"/usr/lib/x86_64-linux-gnu/libc.so.6", "", false},
            {"[kernel.kallsyms]", "", true}};
  p.functions = {{"main", 0, true},
                 {"compute(int)", 0, true},
                 {"helper", 0, true},
                 {"memcpy", 1, true},
                 {"0x1139", 1, false},
                 {"do_syscall_64", 2, true},
                 {"[unknown]", no_index, false}};
  p.frames = {
      {0, 0x401000, 0x1000, "/src/main.cpp", 10, false, false},
      {1, 0x401100, 0x1100, "/src/main.cpp", 20, false, false},
      {2, 0x401100, 0x1100, "/src/helper.hpp", 5, true, false},
      {3, 0x7f0000002000, 0x2000, "", 0, false, false},
      {4, 0x7f0000001139, 0x1139, "", 0, false, false},
      {5, 0xffffffff81000010, 0xffffffff81000010, "", 0, false, true},
      {6, 0x1234, 0x1234, "", 0, false, false},
      {1, 0x401180, 0x1180, "/src/main.cpp", 22, false, false},
  };
  // demo's text at 0x401000 is file offset 0x1000 (pgoff 0 at 0x400000); libc's mapping starts
  // at file offset 0; the kernel's is anchored at _text as perf does.
  p.mappings = {{100, 0, 0x400000, 0x402000, 0},
                {100, 1, 0x7f0000000000, 0x7f0000010000, 0},
                {no_index, 2, kernel_text, ~std::uint64_t{0}, kernel_text}};
  const std::uint32_t frame_mappings[] = {0, 0, 0, 1, 1, 2, no_index, 0};
  for (std::size_t f = 0; f < p.frames.size(); ++f) p.frames[f].mapping = frame_mappings[f];
  p.stacks = {{no_index, 0},  {s_main, 1},   {s_compute, 2}, {s_compute, 3},
              {s_compute, 4}, {s_memcpy, 5}, {s_main, 6},    {s_main, 7}};
  p.threads = {{100, 100, "demo"}, {100, 101, "demo worker"}};
  p.events = {{"cpu-clock", 12, 12 * period, true}};
  const std::pair<std::uint32_t, std::uint32_t> order[] = {
      {s_helper, 0},  {s_libc_unknown, 1}, {s_memcpy, 0},  {s_helper, 0},
      {s_unknown, 1}, {s_syscall, 0},      {s_compute, 0}, {s_libc_unknown, 1},
      {s_helper, 0},  {s_memcpy, 0},       {s_helper, 1},  {s_compute_other, 0}};
  std::uint64_t time = 5'000'000'000;
  for (auto [stack, thread] : order) {
    p.samples.push_back({stack, thread, 0, 0, time, period});
    time += period;
  }
  p.summary.samples = p.summary.samples_read = 12;
  p.summary.first_time = 5'000'000'000;
  p.summary.last_time = time - period;
  p.summary.clockid = 1;  // CLOCK_MONOTONIC
  p.summary.wall_clock_ns = wall_clock_ns;
  p.summary.hostname = "testhost";
  p.summary.arch = "x86_64";
  p.summary.os_release = "6.18.0";
  p.summary.command_line = "perfscope record -g ./demo";
  p.summary.warnings = {"kptr_restrict hides kernel addresses"};
  return p;
}

std::string export_text(const Profile& profile, ExportFormat format) {
  std::ostringstream out;
  perfscope::write_profile(profile, format, out);
  return out.str();
}

std::string temp_path(std::string_view name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "." + std::to_string(::getpid())))
      .string();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  ASSERT_TRUE(file.good()) << path;
}

bool program_runs(const std::vector<std::string>& argv) {
  return perfscope::testing::run_command(argv).exit_status == 0;
}

// Validates `document` against a JSON Schema file; "" when valid, else the reason (errors, or
// why it could not run, with skip set).
std::string schema_errors(const std::string& schema, const std::string& document, bool& skip) {
  std::string path = temp_path("perfscope-schema-doc.json");
  write_file(path, document);
  auto check = perfscope::testing::check_json_schema(schema, path);
  std::filesystem::remove(path);
  skip = !check.ran;
  return check.valid ? "" : check.report;
}

TEST(ProfileExporters, FormatNames) {
  for (auto format : {ExportFormat::folded, ExportFormat::speedscope, ExportFormat::gecko,
                      ExportFormat::pprof, ExportFormat::json, ExportFormat::svg}) {
    auto name = perfscope::export_format_name(format);
    EXPECT_EQ(perfscope::parse_export_format(name), format) << name;
  }
  EXPECT_EQ(perfscope::parse_export_format("flamegraph"), std::nullopt);
  EXPECT_EQ(perfscope::parse_export_format(""), std::nullopt);
}

TEST(ProfileExporters, FoldedIsExact) {
  EXPECT_EQ(export_text(make_profile(), ExportFormat::folded),
            "demo;main;compute 2\n"
            "demo;main;compute;helper_[i] 3\n"
            "demo;main;compute;memcpy 2\n"
            "demo;main;compute;memcpy;do_syscall_64_[k] 1\n"
            "demo_worker;main;[unknown] 1\n"
            "demo_worker;main;compute;[libc.so.6] 2\n"
            "demo_worker;main;compute;helper_[i] 1\n");
}

TEST(ProfileExporters, FoldedPutsEachEventAtItsOwnRoot) {
  Profile p = make_profile();
  p.events.push_back({"cycles", 1, 50000, true});
  p.events[0].samples = 11;
  p.samples.back().event = 1;  // the s_compute_other sample
  p.samples.back().period = 50000;
  std::string folded = export_text(p, ExportFormat::folded);
  EXPECT_NE(folded.find("[cpu-clock];demo;main;compute 1\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("[cycles];demo;main;compute 1\n"), std::string::npos) << folded;
  EXPECT_EQ(folded.find("\ndemo;"), std::string::npos) << folded;
}

TEST(ProfileExporters, SpeedscopeFollowsTheFileFormat) {
  Profile p = make_profile();
  json file = json::parse(export_text(p, ExportFormat::speedscope));
  EXPECT_EQ(file.at("$schema"), "https://www.speedscope.app/file-format-schema.json");
  EXPECT_TRUE(file.at("exporter").is_string());
  EXPECT_TRUE(file.at("name").is_string());
  const json& frames = file.at("shared").at("frames");
  ASSERT_TRUE(frames.is_array());
  for (const auto& frame : frames) {
    ASSERT_TRUE(frame.at("name").is_string());
    if (frame.contains("file")) {
      EXPECT_TRUE(frame["file"].is_string());
    }
    if (frame.contains("line")) {
      EXPECT_TRUE(frame["line"].is_number_unsigned());
    }
  }
  // The two addresses of compute at lines 20 and 22 stay two frames; the inlined helper is one.
  EXPECT_EQ(frames.size(), 8u);

  const json& profiles = file.at("profiles");
  ASSERT_EQ(profiles.size(), 2u);  // one per thread, one event
  ASSERT_TRUE(file.at("activeProfileIndex").is_number_unsigned());
  EXPECT_LT(file["activeProfileIndex"].get<std::size_t>(), profiles.size());
  const std::set<std::string> units{"none",         "nanoseconds", "microseconds",
                                    "milliseconds", "seconds",     "bytes"};
  double all_weights = 0;
  std::map<std::string, double> leaf_weight;
  for (const auto& profile : profiles) {
    EXPECT_EQ(profile.at("type"), "sampled");
    EXPECT_TRUE(profile.at("name").is_string());
    EXPECT_EQ(profile.at("unit"), "nanoseconds");
    EXPECT_TRUE(units.count(profile["unit"].get<std::string>()));
    const json& samples = profile.at("samples");
    const json& weights = profile.at("weights");
    ASSERT_EQ(samples.size(), weights.size());
    double sum = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      ASSERT_TRUE(samples[i].is_array());
      ASSERT_FALSE(samples[i].empty());
      for (const auto& index : samples[i]) {
        ASSERT_TRUE(index.is_number_unsigned());
        ASSERT_LT(index.get<std::size_t>(), frames.size());
      }
      // Caller first: every stack starts at main.
      EXPECT_EQ(frames[samples[i].front().get<std::size_t>()]["name"], "main");
      ASSERT_TRUE(weights[i].is_number());
      ASSERT_GE(weights[i].get<double>(), 0);
      sum += weights[i].get<double>();
      leaf_weight[frames[samples[i].back().get<std::size_t>()]["name"]] += weights[i].get<double>();
    }
    EXPECT_EQ(profile.at("startValue").get<double>(), 0);
    EXPECT_EQ(profile.at("endValue").get<double>() - profile["startValue"].get<double>(), sum);
    all_weights += sum;
  }
  EXPECT_EQ(all_weights, 12.0 * period);
  EXPECT_EQ(leaf_weight["helper"], 4.0 * period);
  EXPECT_EQ(leaf_weight["compute(int)"], 2.0 * period);
  EXPECT_EQ(leaf_weight["do_syscall_64"], 1.0 * period);
  EXPECT_EQ(leaf_weight["[libc.so.6]+0x1139"], 2.0 * period);
  EXPECT_EQ(leaf_weight["[unknown]"], 1.0 * period);
}

// speedscope shows activeProfileIndex first: the busiest thread, not the first one written
// (a real recording's first thread is often the shell that started the workload).
TEST(ProfileExporters, SpeedscopeOpensOnTheBusiestThread) {
  Profile p = make_profile();
  EXPECT_EQ(json::parse(export_text(p, ExportFormat::speedscope))["activeProfileIndex"], 0);
  for (auto& sample : p.samples) sample.thread = 1 - sample.thread;  // the worker: 8 of 12
  json file = json::parse(export_text(p, ExportFormat::speedscope));
  ASSERT_EQ(file.at("profiles").size(), 2u);
  EXPECT_EQ(file["activeProfileIndex"], 1);
  EXPECT_EQ(file["profiles"][1]["name"], "demo worker 100/101 cpu-clock");
  // No samples: one empty profile (speedscope stops answering on a file without profiles).
  p.samples.clear();
  file = json::parse(export_text(p, ExportFormat::speedscope));
  EXPECT_EQ(file["activeProfileIndex"], 0);
  ASSERT_EQ(file.at("profiles").size(), 1u);
  EXPECT_EQ(file["profiles"][0]["name"], "no samples");
  EXPECT_TRUE(file["profiles"][0]["samples"].empty());
  EXPECT_EQ(file["profiles"][0]["endValue"], 0);
}

TEST(ProfileExporters, GeckoTablesAreConsistent) {
  Profile p = make_profile();
  json gecko = json::parse(export_text(p, ExportFormat::gecko));
  const json& meta = gecko.at("meta");
  EXPECT_EQ(meta.at("version"), 27);
  EXPECT_DOUBLE_EQ(meta.at("interval").get<double>(), 1.0);  // ms
  EXPECT_TRUE(meta.at("startTime").is_number());
  EXPECT_EQ(meta.at("processType"), 0);
  EXPECT_TRUE(meta.at("product").is_string());
  EXPECT_TRUE(meta.at("stackwalk").is_number());
  EXPECT_TRUE(meta.at("markerSchema").is_array());
  EXPECT_EQ(meta.at("presymbolicated"), true);
  const json& categories = meta.at("categories");
  ASSERT_TRUE(categories.is_array());
  for (const auto& category : categories) {
    EXPECT_TRUE(category.at("name").is_string());
    EXPECT_TRUE(category.at("color").is_string());
    EXPECT_FALSE(category.at("subcategories").empty());
  }
  EXPECT_TRUE(gecko.at("libs").is_array());
  EXPECT_TRUE(gecko.at("processes").is_array());
  EXPECT_TRUE(gecko.at("pausedRanges").is_array());

  const json& threads = gecko.at("threads");
  ASSERT_EQ(threads.size(), 2u);
  std::map<std::string, int> leaf_samples;
  std::size_t sample_count = 0;
  for (const auto& thread : threads) {
    EXPECT_TRUE(thread.at("name").is_string());
    EXPECT_EQ(thread.at("pid"), 100);
    EXPECT_TRUE(thread.at("tid").is_number());
    EXPECT_EQ(thread.at("registerTime"), 0);
    EXPECT_EQ(thread.at("processType"), "default");
    const json& strings = thread.at("stringTable");

    const json& frame_table = thread.at("frameTable");
    const json& fs = frame_table.at("schema");
    std::set<int> columns;
    for (const char* key : {"location", "relevantForJS", "innerWindowID", "implementation", "line",
                            "column", "category", "subcategory"}) {
      ASSERT_TRUE(fs.contains(key)) << key;
      columns.insert(fs[key].get<int>());
    }
    EXPECT_EQ(columns.size(), 8u);
    const json& frames = frame_table.at("data");
    for (const auto& frame : frames) {
      ASSERT_LT(frame.at(fs["location"].get<int>()).get<std::size_t>(), strings.size());
      EXPECT_TRUE(frame.at(fs["relevantForJS"].get<int>()).is_boolean());
      std::size_t category = frame.at(fs["category"].get<int>()).get<std::size_t>();
      ASSERT_LT(category, categories.size());
      EXPECT_LT(frame.at(fs["subcategory"].get<int>()).get<std::size_t>(),
                categories[category]["subcategories"].size());
      const json& line = frame.at(fs["line"].get<int>());
      EXPECT_TRUE(line.is_null() || line.is_number_unsigned());
    }

    const json& stack_table = thread.at("stackTable");
    int prefix_column = stack_table.at("schema").at("prefix");
    int frame_column = stack_table["schema"].at("frame");
    const json& stacks = stack_table.at("data");
    for (std::size_t i = 0; i < stacks.size(); ++i) {
      const json& prefix = stacks[i].at(prefix_column);
      if (!prefix.is_null()) {
        ASSERT_LT(prefix.get<std::size_t>(), i);
      }
      ASSERT_LT(stacks[i].at(frame_column).get<std::size_t>(), frames.size());
    }

    const json& samples = thread.at("samples");
    int stack_column = samples.at("schema").at("stack");
    int time_column = samples["schema"].at("time");
    ASSERT_TRUE(samples["schema"].contains("eventDelay"));
    double last_time = -1;
    for (const auto& sample : samples.at("data")) {
      const json& stack = sample.at(stack_column);
      ASSERT_FALSE(stack.is_null());
      ASSERT_LT(stack.get<std::size_t>(), stacks.size());
      double time = sample.at(time_column);
      EXPECT_GE(time, last_time);
      last_time = time;
      auto leaf_frame = stacks[stack.get<std::size_t>()][frame_column].get<std::size_t>();
      auto location = frames[leaf_frame][fs["location"].get<int>()].get<std::size_t>();
      ++leaf_samples[strings[location]];
      ++sample_count;
    }
    EXPECT_TRUE(thread.at("markers").at("data").is_array());
    EXPECT_TRUE(thread["markers"].at("schema").contains("startTime"));
  }
  EXPECT_EQ(sample_count, 12u);
  EXPECT_EQ(leaf_samples["helper (in demo)"], 4);
  EXPECT_EQ(leaf_samples["compute(int) (in demo)"], 2);
  EXPECT_EQ(leaf_samples["do_syscall_64 (in [kernel.kallsyms])"], 1);
  // Unresolved, but inside a library the process lists: the Gecko form of a native address.
  EXPECT_EQ(leaf_samples["0x7f0000001139"], 2);
  EXPECT_EQ(leaf_samples["[unknown]"], 1);
}

std::string gunzip(const std::string& compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string result;
  char chunk[4096];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    status = inflate(&stream, Z_NO_FLUSH);
    result.append(chunk, sizeof chunk - stream.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END);
  inflateEnd(&stream);
  return result;
}

TEST(ProfileExporters, PprofParsesBack) {
  std::string gz = export_text(make_profile(), ExportFormat::pprof);
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  perftools::profiles::Profile pb;
  ASSERT_TRUE(pb.ParseFromString(gunzip(gz)));
  auto str = [&](std::int64_t i) { return pb.string_table(static_cast<int>(i)); };
  ASSERT_GT(pb.string_table_size(), 0);
  EXPECT_EQ(pb.string_table(0), "");
  ASSERT_EQ(pb.sample_type_size(), 2);
  EXPECT_EQ(str(pb.sample_type(0).type()), "samples");
  EXPECT_EQ(str(pb.sample_type(0).unit()), "count");
  EXPECT_EQ(str(pb.sample_type(1).type()), "cpu-clock");
  EXPECT_EQ(str(pb.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(str(pb.period_type().type()), "cpu-clock");
  EXPECT_EQ(pb.period(), static_cast<std::int64_t>(period));
  EXPECT_EQ(pb.duration_nanos(), 11 * static_cast<std::int64_t>(period));
  // The profile's warnings (here kptr_restrict's; lost records above 1 % alike) are comments.
  bool warned = false;
  for (std::int64_t comment : pb.comment()) {
    warned |= str(comment) == "warning: kptr_restrict hides kernel addresses";
  }
  EXPECT_TRUE(warned);

  std::map<std::uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : pb.function()) functions[f.id()] = &f;
  std::map<std::uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : pb.location()) locations[l.id()] = &l;
  std::map<std::uint64_t, const perftools::profiles::Mapping*> mappings;
  for (const auto& m : pb.mapping()) mappings[m.id()] = &m;
  ASSERT_EQ(mappings.size(), 3u);  // demo, libc, kernel
  EXPECT_EQ(str(pb.mapping(0).filename()), "/usr/bin/demo");
  EXPECT_EQ(str(pb.mapping(0).build_id()), demo_build_id);

  std::map<std::string, std::int64_t> flat_samples, flat_time;
  std::int64_t total = 0;
  for (const auto& sample : pb.sample()) {
    ASSERT_EQ(sample.value_size(), 2);
    ASSERT_GT(sample.location_id_size(), 0);
    total += sample.value(0);
    EXPECT_EQ(sample.value(1), sample.value(0) * static_cast<std::int64_t>(period));
    const auto* leaf = locations.at(sample.location_id(0));
    ASSERT_GT(leaf->line_size(), 0);
    std::string name = str(functions.at(leaf->line(0).function_id())->name());
    flat_samples[name] += sample.value(0);
    // The outermost location is main's.
    const auto* root = locations.at(sample.location_id(sample.location_id_size() - 1));
    EXPECT_EQ(str(functions.at(root->line(0).function_id())->name()), "main");
    std::set<std::string> labels;
    for (const auto& label : sample.label()) labels.insert(str(label.key()));
    EXPECT_EQ(labels, (std::set<std::string>{"comm", "pid", "tid"}));
    for (const auto& id : sample.location_id()) {
      const auto* location = locations.at(id);
      if (location->mapping_id() != 0) {
        const auto* mapping = mappings.at(location->mapping_id());
        EXPECT_GE(location->address(), mapping->memory_start());
        EXPECT_LT(location->address(), mapping->memory_limit());
      }
    }
  }
  EXPECT_EQ(total, 12);
  EXPECT_EQ(flat_samples["helper"], 4);
  EXPECT_EQ(flat_samples["compute(int)"], 2);
  EXPECT_EQ(flat_samples["memcpy"], 2);
  EXPECT_EQ(flat_samples["0x1139"], 2);
  EXPECT_EQ(flat_samples["do_syscall_64"], 1);
  EXPECT_EQ(flat_samples["[unknown]"], 1);

  // The inlined helper is the first line of compute's location at 0x401100.
  bool found_inline = false;
  for (const auto& location : pb.location()) {
    if (location.address() != 0x401100 || location.line_size() != 2) continue;
    EXPECT_EQ(str(functions.at(location.line(0).function_id())->name()), "helper");
    EXPECT_EQ(location.line(0).line(), 5);
    EXPECT_EQ(str(functions.at(location.line(1).function_id())->name()), "compute(int)");
    EXPECT_EQ(location.line(1).line(), 20);
    EXPECT_EQ(str(functions.at(location.line(1).function_id())->filename()), "/src/main.cpp");
    found_inline = true;
  }
  EXPECT_TRUE(found_inline);
}

// pprof's mapping[0] is the main binary: the executable of the most-sampled process (named by
// its comm), even when every stack starts in libc, as glibc's __libc_start_call_main makes them.
TEST(ProfileExporters, PprofFirstMappingIsTheExecutable) {
  Profile p = make_profile();
  p.functions.push_back({"__libc_start_call_main", 1, true});
  p.frames.push_back({static_cast<std::uint32_t>(p.functions.size() - 1), 0x7f0000003000, 0x3000,
                      "", 0, false, false});
  p.frames.back().mapping = 1;
  p.stacks.push_back({no_index, static_cast<std::uint32_t>(p.frames.size() - 1)});
  p.stacks[s_main].parent = static_cast<std::uint32_t>(p.stacks.size() - 1);
  auto first_mapping = [](const Profile& profile) {
    perftools::profiles::Profile pb;
    EXPECT_TRUE(pb.ParseFromString(gunzip(export_text(profile, ExportFormat::pprof))));
    return pb.mapping_size() == 0 ? std::string()
                                  : pb.string_table(static_cast<int>(pb.mapping(0).filename()));
  };
  EXPECT_EQ(first_mapping(p), "/usr/bin/demo");
  // A process whose comm names no file it mapped: the DSO where most stacks start.
  for (auto& thread : p.threads) thread.comm = "renamed";
  EXPECT_EQ(first_mapping(p), "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

TEST(ProfileExporters, GoToolPprofReadsIt) {
  if (!program_runs({"go", "version"}))
    GTEST_SKIP() << "go is not installed (apt-get install golang-go)";
  std::string dir = temp_path("perfscope-pprof");
  std::filesystem::create_directories(dir + "/gocache");
  std::string file = dir + "/profile.pb.gz";
  write_file(file, export_text(make_profile(), ExportFormat::pprof));
  auto result = perfscope::testing::run_command(
      {"env", "HOME=" + dir, "GOCACHE=" + dir + "/gocache", "GOFLAGS=", "go", "tool", "pprof",
       "-symbolize=none", "-sample_index=samples", "-top", file});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  // Rows: flat flat% sum% cum cum% name, e.g. "4 33.33% 33.33% 4 33.33%  helper (inline)".
  std::map<std::string, std::string> flat;
  std::regex row(R"(^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.+?)(\s+\(inline\))?\s*$)");
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) flat[match[2]] = match[1];
  }
  EXPECT_EQ(flat["helper"], "4") << result.out;
  EXPECT_EQ(flat["compute(int)"], "2") << result.out;
  EXPECT_EQ(flat["memcpy"], "2") << result.out;
  EXPECT_EQ(flat["0x1139"], "2") << result.out;
  EXPECT_EQ(flat["do_syscall_64"], "1") << result.out;
  EXPECT_EQ(flat["[unknown]"], "1") << result.out;
  EXPECT_NE(result.out.find("of 12 total"), std::string::npos) << result.out;
}

TEST(ProfileExporters, JsonRoundTrips) {
  Profile p = make_profile();
  json doc = json::parse(export_text(p, ExportFormat::json));
  EXPECT_EQ(doc.at("format"), "perfscope-profile");
  EXPECT_EQ(doc.at("version"), 1);
  const json& summary = doc.at("summary");
  EXPECT_EQ(summary.at("samples"), p.summary.samples);
  EXPECT_EQ(summary.at("first_time"), p.summary.first_time);
  EXPECT_EQ(summary.at("hostname"), p.summary.hostname);
  EXPECT_EQ(summary.at("warnings"), json(p.summary.warnings));
  EXPECT_EQ(summary.at("unwinding").at("complete"), 0);

  auto index = [](const json& value) {
    return value.is_null() ? no_index : value.get<std::uint32_t>();
  };
  auto hex = [](const json& value) { return std::stoull(value.get<std::string>(), nullptr, 16); };
  ASSERT_EQ(doc.at("events").size(), p.events.size());
  EXPECT_EQ(doc["events"][0].at("name"), "cpu-clock");
  EXPECT_EQ(doc["events"][0].at("period"), 12 * period);
  ASSERT_EQ(doc.at("dsos").size(), p.dsos.size());
  for (std::size_t i = 0; i < p.dsos.size(); ++i) {
    EXPECT_EQ(doc["dsos"][i].at("path"), p.dsos[i].path);
    EXPECT_EQ(doc["dsos"][i].at("build_id"), p.dsos[i].build_id);
    EXPECT_EQ(doc["dsos"][i].at("kernel"), p.dsos[i].kernel);
  }
  ASSERT_EQ(doc.at("functions").size(), p.functions.size());
  for (std::size_t i = 0; i < p.functions.size(); ++i) {
    EXPECT_EQ(doc["functions"][i].at("name"), p.functions[i].name);
    EXPECT_EQ(index(doc["functions"][i].at("dso")), p.functions[i].dso);
    EXPECT_EQ(doc["functions"][i].at("resolved"), p.functions[i].resolved);
  }
  ASSERT_EQ(doc.at("frames").size(), p.frames.size());
  for (std::size_t i = 0; i < p.frames.size(); ++i) {
    const json& frame = doc["frames"][i];
    EXPECT_EQ(frame.at("function"), p.frames[i].function);
    EXPECT_EQ(hex(frame.at("address")), p.frames[i].address);
    EXPECT_EQ(hex(frame.at("dso_address")), p.frames[i].dso_address);
    EXPECT_EQ(frame.at("source_file"), p.frames[i].source_file);
    EXPECT_EQ(frame.at("line"), p.frames[i].line);
    EXPECT_EQ(frame.at("inlined"), p.frames[i].inlined);
    EXPECT_EQ(frame.at("kernel"), p.frames[i].kernel);
    EXPECT_EQ(index(frame.at("mapping")), p.frames[i].mapping);
  }
  EXPECT_EQ(summary.at("clockid"), 1);
  EXPECT_EQ(summary.at("wall_clock_ns"), wall_clock_ns);
  ASSERT_EQ(doc.at("mappings").size(), p.mappings.size());
  for (std::size_t i = 0; i < p.mappings.size(); ++i) {
    const json& mapping = doc["mappings"][i];
    EXPECT_EQ(index(mapping.at("pid")), p.mappings[i].pid);
    EXPECT_EQ(mapping.at("dso"), p.mappings[i].dso);
    EXPECT_EQ(hex(mapping.at("start")), p.mappings[i].start);
    EXPECT_EQ(hex(mapping.at("end")), p.mappings[i].end);
    EXPECT_EQ(hex(mapping.at("pgoff")), p.mappings[i].pgoff);
  }
  ASSERT_EQ(doc.at("stacks").size(), p.stacks.size());
  for (std::size_t i = 0; i < p.stacks.size(); ++i) {
    EXPECT_EQ(index(doc["stacks"][i].at(0)), p.stacks[i].parent);
    EXPECT_EQ(doc["stacks"][i].at(1), p.stacks[i].frame);
  }
  ASSERT_EQ(doc.at("threads").size(), p.threads.size());
  for (std::size_t i = 0; i < p.threads.size(); ++i) {
    EXPECT_EQ(doc["threads"][i].at("pid"), p.threads[i].pid);
    EXPECT_EQ(doc["threads"][i].at("tid"), p.threads[i].tid);
    EXPECT_EQ(doc["threads"][i].at("comm"), p.threads[i].comm);
  }
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>,
           std::pair<std::uint64_t, std::uint64_t>>
      expected, actual;
  for (const auto& s : p.samples) {
    auto& entry = expected[{s.stack, s.thread, s.event}];
    ++entry.first;
    entry.second += s.period;
  }
  for (const auto& row : doc.at("samples")) {
    ASSERT_EQ(row.size(), 5u);
    auto key =
        std::make_tuple(index(row[0]), row[1].get<std::uint32_t>(), row[2].get<std::uint32_t>());
    EXPECT_EQ(actual.count(key), 0u) << "a (stack, thread, event) listed twice";
    actual[key] = {row[3].get<std::uint64_t>(), row[4].get<std::uint64_t>()};
  }
  EXPECT_EQ(actual, expected);
}

TEST(ProfileExporters, SvgIsAnInteractiveFlameGraph) {
  std::string svg = export_text(make_profile(), ExportFormat::svg);
  // all; demo, demo worker; demo: main compute helper memcpy do_syscall_64;
  // demo worker: main [unknown] compute [libc.so.6] helper.
  std::regex frame_line(
      R"re(<g class="f" data-s="(\d+)" data-n="(\d+)" data-d="(\d+)"><title>([^<]*)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"[^>]*/><text[^>]*>[^<]*</text></g>)re");
  std::map<std::string, std::array<int, 3>> colour;
  std::set<std::string> titles;
  std::size_t frames = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame_line);
       it != std::sregex_iterator(); ++it) {
    ++frames;
    std::string title = (*it)[4];
    titles.insert(title);
    colour[title.substr(0, title.find(" ("))] = {std::stoi((*it)[5]), std::stoi((*it)[6]),
                                                 std::stoi((*it)[7])};
  }
  EXPECT_EQ(frames, 13u) << svg;
  std::size_t rects = 0;
  for (auto at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1))
    ++rects;
  EXPECT_EQ(rects, 13u + 1 + 4);  // frames, background, legend
  EXPECT_TRUE(titles.count("all (12 samples, 100.00 %)"));
  EXPECT_TRUE(titles.count("helper (3 samples, 25.00 %)"));
  EXPECT_TRUE(titles.count("helper (1 samples, 8.33 %)"));
  EXPECT_TRUE(titles.count("compute(int) (8 samples, 66.67 %)"));
  EXPECT_TRUE(titles.count("do_syscall_64 (1 samples, 8.33 %)"));
  EXPECT_TRUE(titles.count("[libc.so.6] (2 samples, 16.67 %)"));
  // Kernel frames are blue, user frames warm, unresolved ones grey.
  EXPECT_GT(colour["do_syscall_64"][2], colour["do_syscall_64"][0]);
  EXPECT_GT(colour["main"][0], colour["main"][2]);
  EXPECT_EQ(colour["[unknown]"][0], colour["[unknown]"][2]);
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\"><![CDATA["), std::string::npos);
  EXPECT_NE(svg.find("function zoom("), std::string::npos);
  EXPECT_NE(svg.find("function search("), std::string::npos);
  EXPECT_EQ(svg.find("href="), std::string::npos) << "no external resources";

  if (!program_runs({"python3", "--version"})) GTEST_SKIP() << "python3 is not installed";
  std::string path = temp_path("perfscope-flame.svg");
  write_file(path, svg);
  auto parsed = perfscope::testing::run_command(
      {"python3", "-c",
       "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); "
       "print(len(d.getElementsByTagName('rect')), len(d.getElementsByTagName('script')))",
       path});
  std::filesystem::remove(path);
  ASSERT_EQ(parsed.exit_status, 0) << parsed.err;
  EXPECT_EQ(parsed.out, "18 1\n");
}

TEST(ProfileExporters, EmptyProfileGivesValidFiles) {
  Profile empty;
  EXPECT_EQ(export_text(empty, ExportFormat::folded), "");
  for (auto format : {ExportFormat::speedscope, ExportFormat::gecko, ExportFormat::json}) {
    json doc = json::parse(export_text(empty, format));
    EXPECT_TRUE(doc.is_object()) << perfscope::export_format_name(format);
  }
  perftools::profiles::Profile pb;
  EXPECT_TRUE(pb.ParseFromString(gunzip(export_text(empty, ExportFormat::pprof))));
  EXPECT_EQ(pb.sample_size(), 0);
  EXPECT_NE(export_text(empty, ExportFormat::svg).find("all (0 samples"), std::string::npos);
}

// A profile built without keep_samples (samples folded into groups, as `report` builds it for
// every format but speedscope and gecko): the aggregated formats write the same file as from
// each sample, speedscope the same weights per stack, and gecko, which needs each sample's time,
// refuses with the fix rather than writing an empty profile.
TEST(ProfileExporters, FoldedSampleGroupsExportLikeTheirSamples) {
  Profile each = make_profile();
  Profile folded = make_profile();
  folded.samples.clear();
  for (const auto& sample : each.samples) {
    auto same = std::find_if(folded.sample_groups.begin(), folded.sample_groups.end(),
                             [&](const perfscope::ProfileSampleGroup& group) {
                               return group.stack == sample.stack && group.thread == sample.thread;
                             });
    if (same == folded.sample_groups.end()) {
      folded.sample_groups.push_back({sample.stack, sample.thread, sample.event, sample.cpu, 0, 0});
      same = folded.sample_groups.end() - 1;
    }
    same->samples += 1;
    same->period += sample.period;
  }
  ASSERT_EQ(folded.sample_groups.size(), 8u);
  for (auto format : {ExportFormat::folded, ExportFormat::json, ExportFormat::svg}) {
    EXPECT_EQ(export_text(folded, format), export_text(each, format))
        << perfscope::export_format_name(format);
  }
  EXPECT_EQ(gunzip(export_text(folded, ExportFormat::pprof)),
            gunzip(export_text(each, ExportFormat::pprof)));

  auto weights_by_stack = [](const std::string& text) {
    json file = json::parse(text);
    std::map<std::string, double> weights;
    for (const auto& profile : file.at("profiles")) {
      for (std::size_t i = 0; i < profile.at("samples").size(); ++i) {
        weights[profile["name"].get<std::string>() + profile["samples"][i].dump()] +=
            profile["weights"][i].get<double>();
      }
    }
    return weights;
  };
  auto folded_weights = weights_by_stack(export_text(folded, ExportFormat::speedscope));
  EXPECT_EQ(folded_weights, weights_by_stack(export_text(each, ExportFormat::speedscope)));
  EXPECT_EQ(folded_weights.size(), 8u);

  try {
    export_text(folded, ExportFormat::gecko);
    ADD_FAILURE() << "gecko exported a profile without sample times";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("keep_samples = true"), std::string::npos)
        << error.what();
  }
}

TEST(ProfileExporters, NamesThatAreNotUtf8OrXmlSafeStayValid) {
  Profile p = make_profile();
  // U+FFFE and U+FFFF are valid UTF-8 (JSON keeps them) that XML 1.0 forbids.
  p.functions[0].name = "ma\xffin<int>&\"q\"\xef\xbf\xbf\xef\xbf\xbe";
  json doc = json::parse(export_text(p, ExportFormat::json));
  EXPECT_EQ(doc["functions"][0]["name"], "ma\xef\xbf\xbdin<int>&\"q\"\xef\xbf\xbf\xef\xbf\xbe");
  std::string svg = export_text(p, ExportFormat::svg);
  EXPECT_NE(svg.find("ma?in&lt;int&gt;&amp;&quot;q&quot;??"), std::string::npos);
  EXPECT_TRUE(json::parse(export_text(p, ExportFormat::speedscope)).is_object());
  EXPECT_TRUE(json::parse(export_text(p, ExportFormat::gecko)).is_object());
}

TEST(ProfileExporters, StreamFailureIsAnError) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_THROW(perfscope::write_profile(make_profile(), ExportFormat::json, out),
               std::runtime_error);
  std::ostringstream out2;
  out2.setstate(std::ios::badbit);
  EXPECT_THROW(perfscope::write_profile(make_profile(), ExportFormat::pprof, out2),
               std::runtime_error);
}

TEST(ProfileExporters, SpeedscopeValidatesAgainstSpeedscopesSchema) {
  bool skip = false;
  for (const Profile& p : {make_profile(), Profile{}}) {
    std::string errors =
        schema_errors(PERFSCOPE_SPEEDSCOPE_SCHEMA, export_text(p, ExportFormat::speedscope), skip);
    if (skip) GTEST_SKIP() << errors;
    EXPECT_EQ(errors, "");
  }
  // The validator does reject what the schema forbids: a weight that is not a number.
  Profile p = make_profile();
  std::string text = export_text(p, ExportFormat::speedscope);
  auto weights = text.find("\"weights\":[");
  ASSERT_NE(weights, std::string::npos);
  text.insert(weights + 11, "\"1\",");
  EXPECT_NE(schema_errors(PERFSCOPE_SPEEDSCOPE_SCHEMA, text, skip).find("weights"),
            std::string::npos);
}

TEST(ProfileExporters, JsonValidatesAgainstItsSchema) {
  bool skip = false;
  Profile without_clock = make_profile();
  without_clock.summary.clockid.reset();
  without_clock.summary.wall_clock_ns.reset();
  for (const Profile& p : {make_profile(), without_clock, Profile{}}) {
    std::string errors =
        schema_errors(PERFSCOPE_PROFILE_JSON_SCHEMA, export_text(p, ExportFormat::json), skip);
    if (skip) GTEST_SKIP() << errors;
    EXPECT_EQ(errors, "");
  }
  // A key the schema does not document, and a decimal address, are both errors.
  json doc = json::parse(export_text(make_profile(), ExportFormat::json));
  doc["frames"][0]["undocumented"] = 1;
  doc["mappings"][0]["start"] = "4194304";
  std::string errors = schema_errors(PERFSCOPE_PROFILE_JSON_SCHEMA, doc.dump(), skip);
  EXPECT_NE(errors.find("/frames/0"), std::string::npos) << errors;
  EXPECT_NE(errors.find("/mappings/0/start"), std::string::npos) << errors;
}

TEST(ProfileExporters, GeckoHasProcessesLibsAndWallClockTime) {
  Profile p = make_profile();
  // A second process, whose libc sample's frame was first seen (and mapped) in process 100.
  p.threads.push_back({200, 200, "other"});
  p.samples[1].thread = 2;
  p.mappings.push_back({200, 1, 0x7e0000000000, 0x7e0000004000, 0x1000});
  json gecko = json::parse(export_text(p, ExportFormat::gecko));
  const json& meta = gecko.at("meta");
  // Firefox Profiler's GeckoProfileFullMeta: the keys its importer reads without a default.
  for (const char* key : {"version", "startTime", "shutdownTime", "categories", "markerSchema",
                          "interval", "stackwalk", "debug", "gcpoison", "asyncstack", "processType",
                          "presymbolicated", "sampleUnits"}) {
    EXPECT_TRUE(meta.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(meta.at("startTime").get<double>(),
                   static_cast<double>(wall_clock_ns + 5'000'000'000) / 1e6);
  EXPECT_EQ(meta.at("startTimeAsClockMonotonicNanosecondsSinceBoot"), 5'000'000'000u);
  EXPECT_TRUE(gecko.at("sources").at("data").is_array());

  auto check_libs = [](const json& libs) {
    std::uint64_t previous_end = 0;
    for (const auto& lib : libs) {
      for (const char* key : {"name", "path", "debugName", "debugPath", "breakpadId", "arch"}) {
        EXPECT_TRUE(lib.at(key).is_string()) << key;
      }
      // Sorted and disjoint: the Profiler's AddressLocator binary-searches them.
      EXPECT_GE(lib.at("start").get<std::uint64_t>(), previous_end);
      EXPECT_GT(lib.at("end").get<std::uint64_t>(), lib["start"].get<std::uint64_t>());
      previous_end = lib["end"];
    }
  };
  const json& libs = gecko.at("libs");
  check_libs(libs);
  ASSERT_EQ(libs.size(), 3u);  // demo, libc, the kernel: by address
  EXPECT_EQ(libs[0].at("name"), "demo");
  EXPECT_EQ(libs[0].at("path"), "/usr/bin/demo");
  EXPECT_EQ(libs[0].at("debugName"), "demo");
  EXPECT_EQ(libs[0].at("debugPath"), "/usr/bin/demo");
  // The build id's first 16 bytes as a little-endian GUID, then age 0 (Python's
  // uuid.UUID(bytes_le=...) gives the same).
  EXPECT_EQ(libs[0].at("breakpadId"), "B2A3D84FE0C1D8F97A6B5C4D3E2F1A0B0");
  EXPECT_EQ(libs[0].at("codeId"), "4FD8A3B2C1E0F9D87A6B5C4D3E2F1A0B9C8D7E6F");
  EXPECT_EQ(libs[0].at("arch"), "x86_64");
  EXPECT_EQ(libs[0].at("start"), 0x400000u);
  EXPECT_EQ(libs[0].at("end"), 0x402000u);
  EXPECT_EQ(libs[0].at("offset"), 0u);
  EXPECT_EQ(libs[1].at("path"), "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(libs[1].at("breakpadId"), "");  // no build id known
  EXPECT_FALSE(libs[1].contains("codeId"));
  EXPECT_EQ(libs[2].at("name"), "[kernel.kallsyms]");
  EXPECT_EQ(libs[2].at("offset"), kernel_text);

  // The unresolved libc frame of process 100 is an address the Profiler's importer places in
  // libc at the address relative to the library's base (start - offset): 0x1139.
  const json& threads = gecko.at("threads");
  ASSERT_EQ(threads.size(), 2u);
  bool found = false;
  for (const auto& thread : threads) {
    EXPECT_EQ(thread.at("pid"), 100);
    EXPECT_EQ(thread.at("processName"), "demo");
    for (const auto& frame : thread.at("frameTable").at("data")) {
      std::string location = thread["stringTable"][frame[0].get<std::size_t>()];
      if (!location.starts_with("0x")) continue;
      std::uint64_t address = std::stoull(location, nullptr, 16);
      for (const auto& lib : libs) {
        if (address < lib["start"].get<std::uint64_t>() ||
            address >= lib["end"].get<std::uint64_t>())
          continue;
        EXPECT_EQ(lib["name"], "libc.so.6");
        EXPECT_EQ(
            address - (lib["start"].get<std::uint64_t>() - lib["offset"].get<std::uint64_t>()),
            0x1139u);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);

  // Process 200: its own meta, its own libs (its libc mapping, the kernel's), its thread. Its
  // frame in libc was mapped in process 100, so it keeps its readable name.
  const json& processes = gecko.at("processes");
  ASSERT_EQ(processes.size(), 1u);
  const json& other = processes[0];
  for (const char* key : {"version", "startTime", "shutdownTime", "categories", "markerSchema"}) {
    EXPECT_TRUE(other.at("meta").contains(key)) << key;
  }
  EXPECT_EQ(other["meta"]["startTime"], meta["startTime"]);
  check_libs(other.at("libs"));
  ASSERT_EQ(other["libs"].size(), 2u);
  EXPECT_EQ(other["libs"][0].at("start"), 0x7e0000000000u);
  EXPECT_EQ(other["libs"][0].at("offset"), 0x1000u);
  EXPECT_TRUE(other.at("processes").empty());
  EXPECT_TRUE(other.at("pausedRanges").empty());
  ASSERT_EQ(other.at("threads").size(), 1u);
  const json& thread = other["threads"][0];
  EXPECT_EQ(thread.at("pid"), 200);
  EXPECT_EQ(thread.at("processName"), "other");
  std::set<std::string> locations(thread.at("stringTable").begin(), thread["stringTable"].end());
  EXPECT_TRUE(locations.count("[libc.so.6]+0x1139 (in libc.so.6)"));
  EXPECT_EQ(thread.at("samples").at("data").size(), 1u);
  // Its sample's time is still relative to the one startTime of the profile.
  EXPECT_DOUBLE_EQ(thread["samples"]["data"][0][1].get<double>(), 1.0);

  // Without CLOCK_DATA there is no date to give: 0, and no monotonic start.
  p.summary.wall_clock_ns.reset();
  p.summary.clockid.reset();
  json undated = json::parse(export_text(p, ExportFormat::gecko));
  EXPECT_EQ(undated["meta"].at("startTime"), 0);
  EXPECT_FALSE(undated["meta"].contains("startTimeAsClockMonotonicNanosecondsSinceBoot"));
}

TEST(ProfileExporters, PprofHasTheRecordedMappingsAndWallClockTime) {
  Profile p = make_profile();
  // A frame in demo that no recorded mapping covered gets a mapping made from its DSO.
  p.frames.push_back({0, 0x900000, 0x1010, "", 0, false, false});
  p.stacks.push_back({no_index, static_cast<std::uint32_t>(p.frames.size() - 1)});
  p.samples.push_back(
      {static_cast<std::uint32_t>(p.stacks.size() - 1), 0, 0, 0, p.summary.last_time, period});
  perftools::profiles::Profile pb;
  ASSERT_TRUE(pb.ParseFromString(gunzip(export_text(p, ExportFormat::pprof))));
  auto str = [&](std::int64_t i) { return pb.string_table(static_cast<int>(i)); };
  EXPECT_EQ(pb.time_nanos(), static_cast<std::int64_t>(wall_clock_ns + 5'000'000'000));
  EXPECT_EQ(pb.duration_nanos(), 11 * static_cast<std::int64_t>(period));
  ASSERT_EQ(pb.mapping_size(), 4);
  std::map<std::string, std::vector<const perftools::profiles::Mapping*>> by_file;
  for (const auto& m : pb.mapping()) by_file[str(m.filename())].push_back(&m);
  ASSERT_EQ(by_file["/usr/bin/demo"].size(), 2u);
  const auto* demo = by_file["/usr/bin/demo"][0];
  const auto* made_up = by_file["/usr/bin/demo"][1];
  if (demo->memory_start() != 0x400000) std::swap(demo, made_up);
  EXPECT_EQ(demo->memory_start(), 0x400000u);
  EXPECT_EQ(demo->memory_limit(), 0x402000u);
  EXPECT_EQ(demo->file_offset(), 0u);
  EXPECT_EQ(str(demo->build_id()), demo_build_id);
  EXPECT_TRUE(demo->has_functions());
  EXPECT_TRUE(demo->has_line_numbers());
  EXPECT_TRUE(demo->has_inline_frames());
  EXPECT_EQ(made_up->memory_start(), 0x900000u);
  EXPECT_EQ(made_up->memory_limit(), 0x900001u);
  EXPECT_EQ(made_up->file_offset(), 0x1010u);
  ASSERT_EQ(by_file["/usr/lib/x86_64-linux-gnu/libc.so.6"].size(), 1u);
  const auto* libc = by_file["/usr/lib/x86_64-linux-gnu/libc.so.6"][0];
  EXPECT_EQ(libc->memory_start(), 0x7f0000000000u);
  EXPECT_EQ(libc->memory_limit(), 0x7f0000010000u);
  EXPECT_TRUE(libc->has_functions());  // memcpy
  EXPECT_FALSE(libc->has_line_numbers());
  ASSERT_EQ(by_file["[kernel.kallsyms]"].size(), 1u);
  EXPECT_EQ(by_file["[kernel.kallsyms]"][0]->memory_start(), kernel_text);
  EXPECT_EQ(by_file["[kernel.kallsyms]"][0]->file_offset(), kernel_text);
  // Every location in a mapping lies in it.
  std::map<std::uint64_t, const perftools::profiles::Mapping*> mappings;
  for (const auto& m : pb.mapping()) mappings[m.id()] = &m;
  for (const auto& location : pb.location()) {
    if (location.mapping_id() == 0) continue;
    const auto* mapping = mappings.at(location.mapping_id());
    EXPECT_GE(location.address(), mapping->memory_start());
    EXPECT_LT(location.address(), mapping->memory_limit());
  }
}

}  // namespace
