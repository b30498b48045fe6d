#include "matmem/runtime/thread_team.hpp"

#include <fmt/format.h>

#include "matmem/runtime/error.hpp"

namespace matmem {

ThreadTeam::ThreadTeam(int size) {
  if (size < 1) throw Error(fmt::format("ThreadTeam: {} threads (at least 1)", size));
  errors_.resize(std::size_t(size));
  threads_.reserve(std::size_t(size - 1));
  for (int k = 1; k < size; ++k) threads_.emplace_back([this, k] { serve(k); });
}

ThreadTeam::~ThreadTeam() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadTeam::run_part(int part) {
  try {
    part_(fn_, part);
  } catch (...) {
    errors_[std::size_t(part)] = std::current_exception();
  }
}

template <class Done>
bool ThreadTeam::spin_until(Done done) {
  const auto end = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int k = 0; k < 64; ++k) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= end) return done();
    std::this_thread::yield();  // to a thread with work, when there are more threads than cores
  }
}

void ThreadTeam::serve(int part) {
  std::uint64_t seen = 0;
  for (;;) {
    const auto ready = [&] {
      return stop_.load(std::memory_order_acquire) || job_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = job_.load(std::memory_order_acquire);
    run_part(part);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
    done_.notify_one();
  }
}

void ThreadTeam::run_parts(Part part, void* fn) {
  for (std::exception_ptr& e : errors_) e = nullptr;
  part_ = part;
  fn_ = fn;
  if (!threads_.empty()) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      pending_.store(int(threads_.size()), std::memory_order_relaxed);
      job_.fetch_add(1, std::memory_order_release);
    }
    start_.notify_all();
  }
  run_part(0);
  const auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!threads_.empty() && !spin_until(finished)) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, finished);
  }
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace matmem
