// OpProfile: where a tape's time goes, op by op.
//
// Attach one to a tape (Tape::set_profile) and every op's forward and backward kernel is timed with the
// steady clock and summed per op kind, together with the time the backward pass spends zeroing gradient
// buffers, the arena memory each op kind's outputs and saved buffers take, the FLOPs it counts and the
// traffic it declares (so its time can be set against the machine's peaks and streaming rate). Detached (the
// default) it costs the tape one branch per op.
// `matmem bench train --profile` prints it for the bundled training steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace matmem {

struct OpDef;

struct OpProfile {
  struct Row {
    std::string name;
    std::int64_t forward_calls = 0, backward_calls = 0;
    double forward_ns = 0, backward_ns = 0;
    double bytes = 0;  // arena bytes of the outputs and saved buffers of its forward calls
    double flops = 0;  // its forward and backward FLOPs as the op counts them (OpDef::flops; re-runs not counted)
    double traffic = 0;  // bytes its forward and backward must move at least (OpDef::traffic; 0: not declared)
    bool gemm = false;   // OpDef::gemm
  };
  std::vector<Row> rows;  // in order of first appearance

  void add_forward(const OpDef& op, double ns, double bytes) {
    Row& r = row(op);
    ++r.forward_calls;
    r.forward_ns += ns;
    r.bytes += bytes;
  }
  void add_flops(const OpDef& op, double flops) { row(op).flops += flops; }
  void add_traffic(const OpDef& op, double bytes) { row(op).traffic += bytes; }
  void add_backward(const OpDef& op, double ns) {
    Row& r = row(op);
    ++r.backward_calls;
    r.backward_ns += ns;
  }
  double total_ns() const;
  void clear() {
    rows.clear();
    ops_.clear();
  }

 private:
  Row& row(const OpDef& op);
  std::vector<const OpDef*> ops_;  // ops_[k] is the op of rows[k]
};

}  // namespace matmem
