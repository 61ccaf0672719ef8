// Records for what existed before a recording started, in the kernel's own layouts, as perf
// record synthesizes them: the kernel map, and COMM, FORK and MMAP2 records of running processes
// read from /proc. Each carries a zeroed sample_id trailer of `sample_id_size` bytes (time 0:
// readers take them as "before everything").
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace perfscope {

using RecordSink = std::function<void(std::span<const std::byte>)>;

// What is synthesized beside COMM, FORK and MMAP2.
struct SynthesisOptions {
  // A NAMESPACES record for each thread (its /proc/PID/ns links), as perf record --namespaces.
  bool namespaces = false;
  // A CGROUP record for each cgroup of the cgroup2 hierarchy (id and path), as perf record
  // --all-cgroups: samples' PERF_SAMPLE_CGROUP ids then have a path.
  bool cgroups = false;
  // COMM and FORK records of the tasks that exist when recording starts (perf record --synth
  // task); false leaves a launched command's own COMM only, as perf's --synth=no.
  bool tasks = true;
  // MMAP2 records of those tasks' code mappings (--synth mmap); only with `tasks`.
  bool mmaps = true;
};

// Where the cgroup2 hierarchy is mounted (/proc/self/mounts); empty when it is not.
std::string cgroup2_mount();
// A PERF_RECORD_CGROUP for every cgroup under the cgroup2 mount at `root` ("/" for the root
// itself); without a cgroup2 mount, the one root cgroup every task is in (id 1). Returns how
// many were synthesized.
std::size_t synthesize_cgroups(std::size_t sample_id_size, const RecordSink& sink,
                               const std::string& root);

// A PERF_RECORD_MMAP for [kernel.kallsyms]_text at _text (from /proc/kallsyms). False when the
// address cannot be read (kptr_restrict).
bool synthesize_kernel_map(std::size_t sample_id_size, const RecordSink& sink);
// COMM for every thread of `pid`, FORK for each thread but the main one, MMAP2 for each
// executable mapping. False when the process is gone.
bool synthesize_process(pid_t pid, std::size_t sample_id_size, const RecordSink& sink,
                        const SynthesisOptions& options = {});
// COMM and FORK only: for a launched command, a gated copy of the recorder until its exec, whose
// maps are the recorder's and name nothing the command runs (perf writes its COMM alone).
bool synthesize_process_threads(pid_t pid, std::size_t sample_id_size, const RecordSink& sink,
                                const SynthesisOptions& options = {});
// Every process in /proc. Returns how many were synthesized.
std::size_t synthesize_all_processes(std::size_t sample_id_size, const RecordSink& sink,
                                     const SynthesisOptions& options = {});
// A PERF_RECORD_LOST of `lost` records for event `id`: the losses the kernel counted but never
// reported in a LOST record of its own (SamplingSession::kernel_lost), so that the file tells
// every loss.
void synthesize_lost(std::uint64_t id, std::uint64_t lost, std::size_t sample_id_size,
                     const RecordSink& sink);
// A PERF_RECORD_LOST_SAMPLES of the kernel's whole count of samples it could not write
// (PERF_FORMAT_LOST), as perf record writes at its end: perf report's "Total Lost Samples".
void synthesize_lost_samples(std::uint64_t lost, std::size_t sample_id_size,
                             const RecordSink& sink);

}  // namespace perfscope
