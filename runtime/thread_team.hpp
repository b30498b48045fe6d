// ThreadTeam: a fixed team of threads that runs one job of `size()` parts at a time.
//
// Part 0 runs on the calling thread and parts 1..n−1 on the team's own threads, started once, so a job
// allocates nothing and starts no thread (a training step splits its batch over the team every step: see
// models/training/trainer.hpp). Between jobs a team thread first spins on the job counter for up to
// kSpin, then parks on a condition variable; the caller waits for the parts the same way. Jobs come every
// few milliseconds with a short serial gap between them (the update), and waking a parked thread costs
// tens of microseconds, so the spin keeps that wake-up off the step's critical path. run() returns when
// every part has finished, and then rethrows the exception of the lowest-numbered part that threw, if any.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace matmem {

class ThreadTeam {
 public:
  explicit ThreadTeam(int size);  // size ≥ 1 (1: no threads, run() calls f(0))
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return int(errors_.size()); }

  // f(k) for k = 0..size()−1, concurrently.
  template <class F>
  void run(F&& f) {
    using Fn = std::remove_reference_t<F>;
    run_parts(+[](void* fn, int part) { (*static_cast<Fn*>(fn))(part); },
              const_cast<void*>(static_cast<const void*>(&f)));
  }

 private:
  using Part = void (*)(void*, int);
  static constexpr std::chrono::microseconds kSpin{1000};
  // Spins until done() or kSpin has passed; true if done().
  template <class Done>
  static bool spin_until(Done done);
  void run_parts(Part part, void* fn);
  void serve(int part);  // a team thread's loop
  void run_part(int part);

  std::vector<std::thread> threads_;
  std::vector<std::exception_ptr> errors_;  // per part, of the current job
  std::mutex mutex_;
  std::condition_variable start_, done_;
  Part part_ = nullptr;
  void* fn_ = nullptr;
  // Written under mutex_, read without it while spinning.
  std::atomic<std::uint64_t> job_{0};  // incremented per job; a thread runs its part once per value
  std::atomic<int> pending_{0};        // team threads still running the current job
  std::atomic<bool> stop_{false};
};

}  // namespace matmem
