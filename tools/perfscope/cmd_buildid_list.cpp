// perfscope buildid-list: the build ids a recording holds for its files, as perf buildid-list
// prints them ("BUILD_ID PATH"); -H only the files its samples hit; -k the running kernel's.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "commands.hpp"
#include "perfscope/abi/record_type.hpp"
#include "perfscope/abi/sample_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_format.hpp"
#include "perfscope/analysis/perf_data/perf_data_reader.hpp"
#include "perfscope/analysis/symbols/build_id.hpp"
#include "perfscope/analysis/symbols/task_maps.hpp"
#include "perfscope/core/records.hpp"
#include "subcommand_table.hpp"

namespace perfscope::cli {

namespace {

// perf's DSO of a mapping: the kernel's map is "[kernel.kallsyms]_text", its file
// "[kernel.kallsyms]"; anonymous executable memory (JIT code) is /tmp/perf-PID.map.
std::string dso_name(std::string_view file, std::uint32_t pid) {
  if (file.starts_with("[kernel.kallsyms]")) return "[kernel.kallsyms]";
  if (file == "//anon" || file == "/dev/zero" || file == "/anon_hugepage" ||
      file.starts_with("[stack") || file.starts_with("/SYSV") || file == "[heap]") {
    return fmt::format("/tmp/perf-{}.map", static_cast<std::int32_t>(pid));
  }
  return std::string(file);
}

bool executable_mapping(const Record& record, std::uint16_t misc) {
  if (misc & abi::record_misc::mmap_data) return false;
  if (const auto* mmap2 = std::get_if<Mmap2Record>(&record)) {
    return mmap2->prot == 0 || (mmap2->prot & PROT_EXEC) != 0;
  }
  return true;
}

}  // namespace

BuildidListCommand::BuildidListCommand(CLI::App& app) {
  app_ = add_subcommand_named(app, "buildid-list");
  app_->add_option("-i,--input", input_, "Input file (default perf.data)");
  app_->add_flag("-H,--with-hits", with_hits_, "Only the files the samples hit");
  app_->add_flag("-k,--kernel", kernel_, "The running kernel's build id");
  app_->add_flag("-f,--force", force_, "Read a file another user owns (perf's -f)");
  app_->footer("Examples:\n  perfscope buildid-list -i perf.data\n  perfscope buildid-list -k");
}

int BuildidListCommand::run() {
  if (kernel_) {
    auto id = kernel_build_id();
    if (!id) {
      throw std::runtime_error(
          "the running kernel's build id could not be read from /sys/kernel/notes");
    }
    fmt::print("{}\n", build_id_hex(*id));
    return 0;
  }
  PerfDataReader reader = PerfDataReader::open(input_);
  // As perf: a file without a BUILD_ID table lists what its samples hit (the ids the records
  // carry, if any); one with AUX trace data lists every id (its samples are not decoded).
  const auto& present = reader.features().present;
  auto has = [&](perf_data::Feature feature) {
    return std::find(present.begin(), present.end(), static_cast<unsigned>(feature)) !=
           present.end();
  };
  if (!reader.pipe_mode() && has(perf_data::Feature::auxtrace)) with_hits_ = false;
  if (!has(perf_data::Feature::build_id)) with_hits_ = true;
  std::set<std::string> hit, seen;
  std::vector<std::string> order;
  if (with_hits_) {
    // The file of each sample's ip, as the recording's maps give it at the sample's time.
    TaskMaps maps;
    SampleRecord sample;
    Record decoded;
    auto error = reader.for_each_record_ordered([&](const PerfDataRecord& record) {
      const auto& config = reader.events()[record.event].config;
      if (record.view.header.type != static_cast<std::uint32_t>(abi::RecordType::sample)) {
        if (!TaskMaps::observes(record.view.header.type)) return;
        maps.observe(record.view, config);
        // perf's files in the order a mapping first named them.
        DecodeError decode_error;
        if (!decode_record(record.view, config, decoded, decode_error)) return;
        std::string_view file;
        std::uint32_t pid = 0;
        if (const auto* mmap = std::get_if<MmapRecord>(&decoded)) {
          file = mmap->filename;
          pid = mmap->pid;
        } else if (const auto* mmap2 = std::get_if<Mmap2Record>(&decoded)) {
          file = mmap2->filename;
          pid = mmap2->pid;
        }
        if (file.empty() || !executable_mapping(decoded, record.view.header.misc)) return;
        std::string name = dso_name(file, pid);
        if (seen.insert(name).second) order.push_back(std::move(name));
        return;
      }
      DecodeError decode_error;
      if (!decode_sample(record.view, config, sample, decode_error)) return;
      if (!sample.has(abi::sample_format::ip)) return;
      auto cpumode =
          static_cast<std::uint16_t>(record.view.header.misc & abi::record_misc::cpumode_mask);
      if (const std::string* file = maps.dso_of(sample.pid, sample.ip, cpumode)) {
        hit.insert(dso_name(*file, sample.pid));
      }
    });
    if (error) throw *error;
  }
  std::string out;
  std::set<std::string> listed;
  for (const BuildIdEntry& entry : reader.features().build_ids) {
    if (with_hits_ && !hit.contains(entry.filename)) continue;
    // One line a file, as perf keeps one DSO a file (old perf wrote the vDSO's id per process).
    if (!listed.insert(entry.filename).second) continue;
    out += fmt::format("{:<40} {}\n", build_id_hex(entry.build_id), entry.filename);
  }
  // With hits, perf lists the files hit that have no build id too, after those that have one.
  for (const std::string& file : order) {
    if (hit.contains(file) && !listed.contains(file)) out += fmt::format("{:<40} {}\n", "", file);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace perfscope::cli
