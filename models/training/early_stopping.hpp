// Early stopping on a validation error (config keys eval.interval, eval.patience).
//
// The trainer evaluates the validation part every `interval` steps and hands the error here. An error below
// the best so far (strictly) is the new best, and the count of evaluations without improvement restarts at 0;
// any other adds 1 to it. Training stops when that count reaches `patience` (patience 0: never stops). A NaN
// error never improves. The state is four numbers, kept in the checkpoint, so a resumed run stops where an
// uninterrupted one would.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

namespace matmem {

class EarlyStopping {
 public:
  explicit EarlyStopping(std::int64_t patience = 0) : patience_(patience) {}
  // One evaluation's validation error after `step` steps; true when training should stop now.
  bool record(std::int64_t step, double error);
  bool stopped() const { return stopped_; }
  double best() const { return best_; }
  std::int64_t best_step() const { return best_step_; }  // -1: no evaluation yet
  std::int64_t since_best() const { return bad_; }
  std::int64_t patience() const { return patience_; }

  std::string state() const;                // "best best_step since_best stopped", for a checkpoint
  void set_state(const std::string& text);  // refuses text that state() did not write

 private:
  std::int64_t patience_;
  double best_ = std::numeric_limits<double>::infinity();
  std::int64_t best_step_ = -1, bad_ = 0;
  bool stopped_ = false;
};

}  // namespace matmem
