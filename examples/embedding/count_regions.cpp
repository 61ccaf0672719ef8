// count_regions: counts two regions of this program with perfscope's embedding API and prints
// them as a table and as CSV. The "touch" region writes PAGES fresh pages (default 100): the
// kernel makes its minor-faults count exactly PAGES.
//
//   count_regions [PAGES]
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <perfscope/embed/counters.hpp>
#include <perfscope/embed/scoped_region.hpp>

int main(int argc, char** argv) {
  std::size_t pages = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100;
  std::size_t page_size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  try {
    perfscope::Counters counters("minor-faults,task-clock,context-switches");
    for (const auto& notice : counters.notices())
      std::fprintf(stderr, "note: %s\n", notice.c_str());

    {  // warm up: the first region pays for its own code's first-touch faults
      perfscope::Region warm_up(counters, "warm-up");
    }
    auto* memory = static_cast<char*>(::mmap(nullptr, pages * page_size, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (memory == MAP_FAILED) return 1;
    ::madvise(memory, pages * page_size, MADV_NOHUGEPAGE);
    {
      perfscope::Region region(counters, "touch");
      for (std::size_t i = 0; i < pages; ++i) memory[i * page_size] = 1;
    }
    volatile double sum = 0;
    {
      perfscope::Region region(counters, "compute");
      for (int i = 0; i < 1000000; ++i) sum = sum + i * 0.5;
    }
    auto touch = counters.region_report("touch");
    std::printf("touch: minor-faults=%.0f\n", touch.value("minor-faults"));
    std::fputs(touch.table().c_str(), stdout);
    std::fputs(counters.region_report("compute").csv().c_str(), stdout);
    ::munmap(memory, pages * page_size);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "count_regions: %s\n", error.what());
    return 1;
  }
  return 0;
}
