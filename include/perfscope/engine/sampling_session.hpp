// SamplingSession: opens sampling events on a target, maps one ring buffer per CPU (task targets
// with inherit, CPU-wide and cgroup targets) or per thread (task targets without inherit), shares
// it between the events of that CPU/thread with SET_OUTPUT, waits with epoll, and delivers the
// records of all buffers merged in timestamp order. Loss is never silent: LOST, LOST_SAMPLES and
// THROTTLE records are counted per buffer and available at any time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "perfscope/core/event.hpp"
#include "perfscope/core/event_spec.hpp"
#include "perfscope/core/parse_config.hpp"
#include "perfscope/core/records.hpp"
#include "perfscope/core/ring_buffer.hpp"
#include "perfscope/core/sample_size.hpp"
#include "perfscope/engine/event_opener.hpp"
#include "perfscope/engine/target.hpp"
#include "perfscope/export.hpp"

namespace perfscope {

namespace sys {
class GatedChild;
class EventPoll;
class PollWaker;
}  // namespace sys

struct SamplingOptions {
  std::size_t data_pages = 0;          // per buffer (power of two); 0: RingBuffer's default
  std::uint32_t wakeup_watermark = 0;  // bytes before a wakeup; 0: a quarter of the buffer
  std::uint32_t wakeup_events = 0;     // wake every N samples instead (overrides the watermark)
  bool inherit = true;                 // follow threads and children created later
  bool track_tasks = true;             // COMM (with exec), MMAP2, FORK and EXIT records
  bool context_switches = false;       // SWITCH / SWITCH_CPU_WIDE records
  bool namespaces = false;             // NAMESPACES records of new tasks (and synthesized ones)
  bool cgroups = false;                // CGROUP records of new cgroups (and synthesized ones)
  bool build_id_mmaps = false;         // MMAP2 records with the file's build id (kernel 5.12+)
  bool time_ordered = true;            // merge the buffers by timestamp
  bool skip_unsupported = false;       // leave out events this machine cannot sample
  // MMAP2 for data mappings too (perf's mmap_data): perf's dwarf unwinder reads .eh_frame_hdr
  // through the read-only segment that holds it, which an executable-only map lacks.
  bool data_mmaps = false;
  // AUX area pages (a power of two) per buffer of an event of a PMU that traces into one
  // (is_aux_tracing_pmu: intel_pt, arm_spe_N, ...). Such an event must own its buffers: the
  // first event of the first group. 0: no AUX area.
  std::size_t aux_pages = 0;
  // False: start() leaves the events disabled (a command still runs, its exec no longer enables
  // them) until enable() (perf record -D: the start-up phase left out).
  bool enable_at_start = true;
};

struct PERFSCOPE_EXPORT BufferStats {
  int cpu = -1;    // -1 for a per-thread buffer
  pid_t tid = -1;  // the thread of a per-thread buffer
  std::uint64_t records = 0;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
  std::uint64_t lost_records = 0;  // PERF_RECORD_LOST records ...
  std::uint64_t lost = 0;          // ... and the records they say were lost
  std::uint64_t lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES totals
  std::uint64_t throttles = 0;
  std::uint64_t unthrottles = 0;
  std::uint64_t corrupt = 0;
  std::uint64_t aux_bytes = 0;        // AUX data read from the buffer's AUX area
  std::uint64_t aux_overwritten = 0;  // AUX data the kernel wrote over before it was read
  std::uint64_t aux_truncated = 0;    // AUX records saying the full area made the PMU drop data
  BufferStats& operator+=(const BufferStats& other) noexcept;
};

// An event whose smallest sample (for a user task) is larger than the largest record the
// session's ring buffers take: the kernel would drop every such sample.
struct PERFSCOPE_EXPORT SampleMisfit {
  std::string event;
  SampleSizeBound sample;
  std::size_t data_pages = 0;      // of each buffer
  std::size_t data_bytes = 0;      // data_pages * page size
  std::size_t largest_record = 0;  // the largest record such a buffer takes
  std::size_t pages_needed = 0;    // the fewest data pages (a power of two) that take the sample
  std::size_t pages_advised = 0;   // room for several samples: fewer loses them while it is read
  // "event 'E': each sample takes at least N bytes (…), but a ring buffer of P pages (B bytes)
  // holds records of at most L bytes: the kernel would drop every sample"
  std::string summary() const;
};

// One record as a session delivers it.
struct PERFSCOPE_EXPORT SessionRecord {
  const RecordView& view;
  const ParseConfig& config;  // of the event that wrote it
  std::size_t event;          // index of that event in the session's event list
  std::size_t buffer;         // which buffer it came from
  std::uint64_t time;         // its timestamp (0 when it has none)
  int cpu;                    // the CPU of a per-CPU buffer (even when samples lack CPU); -1 else
};

// AUX data of one buffer, as a session delivers it after the buffer's records of the same pass.
struct PERFSCOPE_EXPORT SessionAuxData {
  const AuxChunk& chunk;
  std::size_t buffer;  // which buffer's AUX area
  int cpu;             // of a per-CPU buffer; -1 else
  pid_t tid;           // of a per-thread buffer; -1 else
};

class PERFSCOPE_EXPORT RecordConsumer {
 public:
  virtual ~RecordConsumer() = default;
  virtual void consume(const SessionRecord& record) = 0;
  // Sessions without an AUX area never call it.
  virtual void consume_aux(const SessionAuxData&) {}
};

// The AUX area a session traces into: which event owns it, and the user page of its first buffer
// (the kernel's time conversion, which decoders of the trace's timestamps need).
struct PERFSCOPE_EXPORT AuxTracing {
  std::size_t event = 0;
  const abi::PerfEventMmapPage* user_page = nullptr;
  bool per_cpu = true;  // one buffer per CPU (else per thread)
};

class PERFSCOPE_EXPORT SamplingSession {
 public:
  // `groups` as parsed by parse_event_list, with sampling settings (period or frequency,
  // sample_type) already set on each attr. TID, TIME and sample_id_all are added to every event,
  // IDENTIFIER when there are several events, CPU for CPU-wide and cgroup targets (or for all
  // events when one asks for it, like ID and STREAM_ID: the sample_id trailers must agree).
  SamplingSession(std::vector<EventGroupSpec> groups, Target target, SamplingOptions options = {});
  ~SamplingSession();
  SamplingSession(const SamplingSession&) = delete;
  SamplingSession& operator=(const SamplingSession&) = delete;

  // Throws Error (EINVAL, with sample_that_cannot_fit()'s description) before starting anything
  // when a sample cannot fit the buffers.
  void open();
  void start();
  // Enables events that start() left disabled (SamplingOptions::enable_at_start false), or
  // disable() disabled; disable() pauses them (perf's --control commands).
  void enable() noexcept;
  void disable() noexcept { stop(); }
  void stop() noexcept;

  // Waits up to timeout_ms for a buffer to fill past its watermark (or for the command to exit),
  // then drains what every buffer held at that moment into `consumer` (one pass: what the
  // events write meanwhile waits for the next poll, so that a recording that feeds itself, the
  // recorder sampled system-wide, still returns to notice the command's exit or a stop).
  // Returns the number of records delivered.
  std::size_t poll(RecordConsumer& consumer, int timeout_ms);
  // Drains until every buffer is empty, without waiting: after stop(), everything there is.
  std::size_t drain(RecordConsumer& consumer);
  // Makes a poll() waiting in another thread return now (after its drain), or the next one
  // return at once: how a drain thread is told to stop. Any thread may call it after open().
  void interrupt_poll() noexcept;
  // True once the launched command has exited (its records may still need a drain()).
  bool command_exited() const noexcept { return command_exited_; }
  // The waits poll() ended because a buffer had data (perf record's "Woken up N times").
  std::uint64_t wakeups() const noexcept { return wakeups_; }
  // How full the fullest buffer was when the last pass began to read it (0 to 1): a reader
  // woken at the watermark finds a quarter; more says it was late, and the kernel drops what
  // finds no room.
  double fullest_fill() const noexcept { return fullest_fill_; }

  pid_t command_pid() const noexcept;
  int wait_for_command();

  const std::vector<EventSpec>& events() const noexcept { return events_; }
  const ParseConfig& config(std::size_t event) const noexcept { return configs_[event]; }
  // The ids the kernel gave the opened copies of event `event` (one per CPU or thread), and its
  // attr as opened (with the flags the session sets): what a perf.data file records of it.
  std::vector<std::uint64_t> event_ids(std::size_t event) const;
  EventAttr opened_attr(std::size_t event) const;
  std::size_t buffer_count() const noexcept { return buffers_.size(); }
  BufferStats buffer_stats(std::size_t buffer) const noexcept;
  BufferStats total_stats() const noexcept;
  // Records the kernel failed to write into the buffers (full) over the whole session, as it
  // counts them per event (PERF_FORMAT_LOST, Linux 6.0; nullopt before). LOST records report
  // the same losses, but only at the buffer's next successful write: what a buffer still full
  // when the events stop has lost, no LOST record ever says. After stop() and drain(), the
  // difference to total_stats().lost is that unreported loss. The inherited copies of an event
  // (threads and processes created later) are in this count: the kernel writes their output,
  // and counts its loss, through the event they were copied from. Events that sample READ are
  // not (the count would change their sample layout).
  std::optional<std::uint64_t> kernel_lost() const noexcept;
  // The first event whose smallest sample cannot fit the buffers, if any (see SampleMisfit):
  // callers that can name their own options for the fix check this before open().
  std::optional<SampleMisfit> sample_that_cannot_fit() const;
  // The AUX area the session maps (SamplingOptions::aux_pages and an AUX-tracing event), after
  // open(); nullopt when none.
  std::optional<AuxTracing> aux_tracing() const noexcept;
  // Events this machine could not open (with skip_unsupported), with why.
  const std::vector<std::string>& unsupported() const noexcept { return unsupported_; }
  // What open() changed that the user should know: a raised open-files limit, user space only
  // at perf_event_paranoid 2 (see user_space_only_fallback).
  const std::vector<std::string>& notices() const noexcept { return opener_.notices(); }

 private:
  struct Buffer {
    RingBuffer ring;
    int fd = -1;  // the event whose fd is in the epoll set (until it hangs up)
    BufferStats stats;
    bool has_record = false;  // `current` holds the peeked record of this round
    RecordView current;
    std::size_t current_event = 0;
    std::uint64_t current_time = 0;
    bool aux = false;  // has an AUX area
  };
  // Hands `consumer` each AUX area's new data and releases it; true when there was some.
  bool drain_aux(RecordConsumer& consumer);
  // Whether the first event traces into an AUX area (with aux_pages); refuses an AUX-tracing
  // event elsewhere.
  void check_aux_events();
  EventAttr prepare_attr(const EventSpec& spec, bool leader, bool tracks_tasks) const;
  bool load_next(Buffer& buffer) noexcept;
  // Up to `passes` rounds of taking each buffer's new records (each round to the head it had).
  std::size_t drain_passes(RecordConsumer& consumer, std::size_t passes);
  void account(Buffer& buffer, const RecordView& view) noexcept;
  std::size_t event_for_record(const RecordView& view) const noexcept;
  std::uint64_t time_of(const RecordView& view, std::size_t event) const noexcept;

  std::vector<EventGroupSpec> groups_;
  std::vector<EventSpec> events_;  // flattened, group order
  std::vector<ParseConfig> configs_;
  Target target_;
  SamplingOptions options_;
  std::vector<Event> open_events_;
  std::vector<std::pair<std::uint64_t, std::size_t>> id_to_event_;  // sorted by id
  std::vector<Buffer> buffers_;
  std::unique_ptr<sys::EventPoll> poll_;
  std::unique_ptr<sys::PollWaker> waker_;  // in the epoll set: interrupt_poll()
  std::unique_ptr<sys::GatedChild> child_;
  std::vector<std::string> unsupported_;
  EventOpener opener_;  // the fallbacks taken (user space only, no PERF_FORMAT_LOST)
  int pidfd_ = -1;
  bool command_exited_ = false;
  std::uint64_t wakeups_ = 0;
  double fullest_fill_ = 0;
  bool opened_ = false;
  bool identified_ = false;  // IDENTIFIER is sampled: there are several events
  bool aux_event_ = false;   // the first event maps an AUX area
};

// True when this machine can sample the CPU's cycles counter at `frequency` (a refusal for the
// kernel's sake at paranoid 2 is not a missing PMU: sessions fall back to user space the same
// way). Recorders use it to choose cpu-clock instead, with a notice, as perf does.
PERFSCOPE_EXPORT bool can_sample_cpu_cycles(std::uint64_t frequency);

}  // namespace perfscope
