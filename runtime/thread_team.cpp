#include "runtime/thread_team.hpp"

#include <fmt/format.h>

#include "runtime/error.hpp"

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
    stop_ = true;
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

void ThreadTeam::serve(int part) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || job_ != seen; });
      if (stop_) return;
      seen = job_;
    }
    run_part(part);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
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
      pending_ = int(threads_.size());
      ++job_;
    }
    start_.notify_all();
  }
  run_part(0);
  if (!threads_.empty()) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace matmem
