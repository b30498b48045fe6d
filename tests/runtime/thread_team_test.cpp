#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "matmem/runtime/error.hpp"
#include "matmem/runtime/thread_team.hpp"

using namespace matmem;
using Catch::Matchers::Contains;

TEST_CASE("a thread team runs every part once per job, part 0 on the caller, the others on their own threads",
          "[threads]") {
  for (int n : {1, 2, 3}) {
    INFO(n << " threads");
    ThreadTeam team(n);
    CHECK(team.size() == n);
    for (int job = 0; job < 50; ++job) {
      std::vector<int> runs(static_cast<std::size_t>(n), 0);
      std::vector<std::thread::id> ids(static_cast<std::size_t>(n));
      team.run([&](int k) {
        ++runs[std::size_t(k)];
        ids[std::size_t(k)] = std::this_thread::get_id();
      });
      for (int k = 0; k < n; ++k) CHECK(runs[std::size_t(k)] == 1);
      CHECK(ids[0] == std::this_thread::get_id());
      for (int k = 1; k < n; ++k) CHECK(ids[std::size_t(k)] != std::this_thread::get_id());
    }
  }
}

TEST_CASE("a thread team's parts run at the same time", "[threads]") {
  // Each part waits until both have started: run() would never return if they ran one after the other.
  ThreadTeam team(2);
  std::atomic<int> started{0};
  team.run([&](int) {
    ++started;
    while (started.load() < 2) std::this_thread::yield();
  });
  CHECK(started == 2);
}

TEST_CASE("a thread team rethrows the lowest part's exception after all parts finished, and runs on", "[threads]") {
  ThreadTeam team(3);
  std::atomic<int> finished{0};
  CHECK_THROWS_WITH(team.run([&](int k) {
    if (k > 0) {
      ++finished;
      throw Error("part " + std::to_string(k));
    }
  }),
                    Contains("part 1"));
  CHECK(finished == 2);
  std::atomic<int> total{0};
  team.run([&](int k) { total += k; });
  CHECK(total == 0 + 1 + 2);
  CHECK_THROWS_WITH(ThreadTeam(0), Contains("0 threads"));
}

TEST_CASE("a thread team wakes parked threads: jobs further apart, and parts longer, than its spin", "[threads]") {
  // Between these jobs the team threads outlast their 1 ms spin and park; in the second loop part 0 is
  // quick and the caller parks while the others sleep. A lost wake-up would hang here (CTest's timeout).
  ThreadTeam team(3);
  std::atomic<int> total{0};
  for (int job = 0; job < 5; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    team.run([&](int k) { total += k; });
  }
  CHECK(total == 5 * (0 + 1 + 2));
  for (int job = 0; job < 5; ++job)
    team.run([&](int k) {
      if (k > 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      total += k;
    });
  CHECK(total == 10 * (0 + 1 + 2));
}
