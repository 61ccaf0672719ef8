// Off-CPU samples in a hand-made Profile: the wall-clock merge, the per-thread time, the state
// sort key, and the exporters' weights and names (folded by ns, pprof's cpu/off_cpu types and
// state labels, one speedscope profile per kind, gecko's threadCPUDelta).
#include "perfscope/analysis/profile/off_cpu_profile.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "perfscope/analysis/exporters/profile_exporters.hpp"
#include "perfscope/analysis/profile/report_table.hpp"
#include "profile.pb.h"

namespace {

using namespace perfscope;

// One thread: 2 on-CPU cpu-clock samples in `spin` (250 us each), one 3 ms sleep and one 0.5 ms
// preemption in `wait`, one 1 ms uninterruptible wait in `wait`.
Profile make_profile() {
  Profile p;
  p.dsos = {{"/bin/demo", "", false}};
  p.functions = {{"spin", 0, true, 0x10}, {"wait", 0, true, 0x20}};
  p.frames = {{0, 0x401010, 0x1010, "", 0, false, false},
              {1, 0x401020, 0x1020, "", 0, false, false}};
  p.stacks = {{no_index, 0}, {no_index, 1}};
  p.threads = {{7, 7, "demo"}};
  ProfileEvent clock{"cpu-clock", 2, 500'000, true, 500'000};
  ProfileEvent off{std::string(off_cpu_event_name), 3, 4'500'000, true, 4'500'000, true};
  p.events = {clock, off};
  p.samples = {
      {0, 0, 0, no_index, 1'000'000, 250'000, ThreadState::on_cpu},
      {0, 0, 0, no_index, 1'250'000, 250'000, ThreadState::on_cpu},
      {1, 0, 1, no_index, 4'500'000, 3'000'000, ThreadState::sleeping},
      {1, 0, 1, no_index, 5'000'000, 500'000, ThreadState::preempted},
      {1, 0, 1, no_index, 6'000'000, 1'000'000, ThreadState::uninterruptible},
  };
  p.summary.samples = p.summary.samples_read = 5;
  p.summary.first_time = 1'000'000;
  p.summary.last_time = 6'000'000;
  return p;
}

std::string export_text(const Profile& profile, ExportFormat format) {
  std::ostringstream out;
  write_profile(profile, format, out);
  return out.str();
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

TEST(OffCpuProfile, ThreadTimesSplitOnAndOffCpuByState) {
  auto times = thread_times(make_profile());
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].tid, 7u);
  EXPECT_EQ(times[0].on_cpu_ns, 500'000u);
  EXPECT_EQ(times[0].off_cpu_ns[static_cast<int>(ThreadState::sleeping)], 3'000'000u);
  EXPECT_EQ(times[0].off_cpu_ns[static_cast<int>(ThreadState::preempted)], 500'000u);
  EXPECT_EQ(times[0].off_cpu_ns[static_cast<int>(ThreadState::uninterruptible)], 1'000'000u);
  EXPECT_EQ(times[0].off_cpu_intervals, 3u);
  EXPECT_EQ(times[0].total(), 5'000'000u);
  std::string text = render_thread_times(make_profile());
  EXPECT_NE(text.find("7/7"), std::string::npos) << text;
  EXPECT_NE(text.find("5.000"), std::string::npos) << text;   // the total, ms
  EXPECT_NE(text.find("90.00%"), std::string::npos) << text;  // off-CPU share
}

TEST(OffCpuProfile, WallMergeMakesOneEventOfWallTime) {
  Profile p = make_profile();
  merge_wall_time(p);
  ASSERT_EQ(p.events.size(), 3u);
  EXPECT_EQ(p.events[2].name, wall_time_event_name);
  EXPECT_EQ(p.events[2].period, 5'000'000u);
  EXPECT_EQ(p.events[2].samples, 5u);
  for (const auto& sample : p.samples) EXPECT_EQ(sample.event, 2u);
  ReportOptions options;
  options.sort = {ReportSortKey::state};
  options.children = false;
  ReportTable table = build_report_table(p, 2, options);
  ASSERT_EQ(table.rows.size(), 4u);
  EXPECT_EQ(table.rows[0].keys[0], "sleeping");
  EXPECT_DOUBLE_EQ(table.percent(table.rows[0].self_period), 60.0);
  EXPECT_EQ(table.rows[1].keys[0], "uninterruptible");
  EXPECT_DOUBLE_EQ(table.percent(table.rows[1].self_period), 20.0);
  EXPECT_DOUBLE_EQ(table.percent(table.rows[2].self_period), 10.0);
  EXPECT_DOUBLE_EQ(table.percent(table.rows[3].self_period), 10.0);
}

TEST(OffCpuProfile, WallMergeRefusesWhatCannotAddUp) {
  Profile without = make_profile();
  without.events[1].samples = 0;
  EXPECT_THROW(merge_wall_time(without), std::invalid_argument);
  Profile cycles = make_profile();
  cycles.events[0].name = "cycles";
  try {
    merge_wall_time(cycles);
    FAIL() << "cycles and nanoseconds were added up";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'cycles'"), std::string::npos) << error.what();
  }
}

TEST(OffCpuProfile, FoldedWeighsTimeInNanoseconds) {
  std::string text = export_text(make_profile(), ExportFormat::folded);
  EXPECT_NE(text.find("[cpu-clock];demo;spin 500000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[offcpu-time];demo;wait 4500000\n"), std::string::npos) << text;
}

TEST(OffCpuProfile, PprofHasCpuAndOffCpuNanosecondsAndStateLabels) {
  perftools::profiles::Profile pb;
  ASSERT_TRUE(pb.ParseFromString(gunzip(export_text(make_profile(), ExportFormat::pprof))));
  auto text = [&](std::int64_t index) { return pb.string_table(static_cast<int>(index)); };
  ASSERT_EQ(pb.sample_type_size(), 3);
  EXPECT_EQ(text(pb.sample_type(1).type()), "cpu");
  EXPECT_EQ(text(pb.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(text(pb.sample_type(2).type()), "off_cpu");
  EXPECT_EQ(text(pb.sample_type(2).unit()), "nanoseconds");
  std::int64_t off_cpu = 0, cpu = 0;
  std::map<std::string, std::int64_t> by_state;
  for (const auto& sample : pb.sample()) {
    cpu += sample.value(1);
    off_cpu += sample.value(2);
    for (const auto& label : sample.label()) {
      if (text(label.key()) == "state") by_state[text(label.str())] += sample.value(2);
    }
  }
  EXPECT_EQ(cpu, 500'000);
  EXPECT_EQ(off_cpu, 4'500'000);
  EXPECT_EQ(by_state["sleeping"], 3'000'000);
  EXPECT_EQ(by_state["preempted"], 500'000);
  EXPECT_EQ(by_state["uninterruptible"], 1'000'000);
}

TEST(OffCpuProfile, SpeedscopeHasOneProfilePerKind) {
  auto json = nlohmann::json::parse(export_text(make_profile(), ExportFormat::speedscope));
  ASSERT_EQ(json["profiles"].size(), 2u);
  EXPECT_EQ(json["profiles"][0]["unit"], "nanoseconds");
  EXPECT_EQ(json["profiles"][0]["endValue"], 500'000);
  EXPECT_EQ(json["profiles"][1]["unit"], "nanoseconds");
  EXPECT_EQ(json["profiles"][1]["endValue"], 4'500'000);
}

TEST(OffCpuProfile, GeckoMarksSamplesOnAndOffCpu) {
  auto json = nlohmann::json::parse(export_text(make_profile(), ExportFormat::gecko));
  ASSERT_EQ(json["threads"].size(), 2u);
  const auto& off = json["threads"][1]["samples"];
  EXPECT_EQ(off["schema"]["threadCPUDelta"], 3);
  EXPECT_EQ(off["schema"]["weight"], 4);
  ASSERT_EQ(off["data"].size(), 3u);
  // The 3 ms sleep: no CPU, weight 3 ms, placed where it began (1.5 ms after the first sample).
  EXPECT_EQ(off["data"][0][3], 0);
  EXPECT_DOUBLE_EQ(off["data"][0][4].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(off["data"][0][1].get<double>(), 0.5);
  const auto& on = json["threads"][0]["samples"];
  EXPECT_EQ(on["data"][0][3], 250'000);
}

}  // namespace
