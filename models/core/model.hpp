/// @file
/// The declarative model: a model is written once as one time step.
///
/// A Model subclass declares its recurrent states in its constructor (name, per-sample shape, initial
/// value: zero, a constant, learned or given), and implements step(Step&): it reads the input frame and the
/// previous states, creates or finds its parameters by name (step.mat(...), step.parameter(...)), and
/// sets the next states and the output logits. run_sequence() unrolls it over a task Sequence and a
/// batch on a tape; Model owns the parameters (a ParameterStore), created on the first (build) pass with
/// the model's seeded initialisation.
///
/// Parameter names are paths: step.mat("ctrl/l1", {{"x", x}, {"h", h}}, 15, 15) uses ctrl/l1/x/U,
/// ctrl/l1/x/V, ctrl/l1/h/U, ctrl/l1/h/V and the bias ctrl/l1/B. A step must ask for its parameters in the
/// same order every time step (as straight-line model code does); the Step caches them by that order and
/// a hash of the name, so a training step builds no strings and looks nothing up.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "matmem/autodiff/parameters.hpp"
#include "matmem/ops/ops.hpp"
#include "matmem/runtime/random.hpp"

namespace matmem {

struct Sequence;
struct Neighbours;

/// How a parameter starts (spec/models.md, "Initialisation").
struct Init {
  /// The kind: glorot (uniform, Glorot & Bengio's bound), constant (every element a), normal (mean a,
  /// stddev b), identity (a on the diagonal, 0 elsewhere).
  enum Kind { glorot, constant, normal, identity } kind = glorot;
  double a = 0, b = 0;  ///< constant: a;  normal: mean a, stddev b;  identity: a on the diagonal, 0 elsewhere
  static Init Glorot() { return {glorot}; }  ///< Glorot uniform (the default)
  static Init Constant(double v) { return {constant, v}; }  ///< every element v
  /// Normal(mean, stddev) elements.
  static Init Normal(double mean, double stddev) { return {normal, mean, stddev}; }
  static Init Identity(double scale) { return {identity, scale}; }  ///< scale · I (rectangular: the leading diagonal)
};

/// A recurrent state of a model: its name, per-sample shape and value at time step 0. A Model declares its
/// states in its constructor (declare_state); a step reads one with Step::state(name) and writes its next
/// value with Step::next(name, v). A state whose next value is not set keeps its value.
struct StateDecl {
  std::string name;  ///< as Step::state() and Step::next() take it
  Shape shape;  ///< per sample: batch 1
  /// The value at time step 0, the same for every sample: zero; a constant (every element `value`);
  /// learned (a parameter named `<model>/init/<name>`, started with `learned_init`, trained with the rest);
  /// given (the tensor `initial`).
  enum Start { zero, constant, learned, given } start = zero;
  double value = 0;            ///< constant start
  Init learned_init = Init::Normal(0, 0.01);  ///< learned start: how the parameter starts
  Tensor initial;              ///< given start: a per-sample value (batch 1), the same for every sample
  /// Recomputation (Tape::chain): the values a step writes inside Step::link(name) form a recomputed chain
  /// with this segment; 1: every value kept; 0: chosen per pass from the state's size (Step::auto_segment).
  int segment = 1;
};

class Step;

/// Receives the named per-step tensors a model exposes (Step::expose) while an Unroller runs it: a MatNTM's
/// read and write weightings and its memory, say, for `matmem inspect`.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  /// `value` is the batch's [B,…] tensor `name` at time step t, valid only during the call (a recomputed
  /// chain may reuse its buffer): copy what you keep.
  virtual void observe(std::int64_t t, std::string_view name, const Var& value) = 0;
};

/// A model written as one time step (see the file): a subclass declares its states and sizes in its
/// constructor and implements step().
class Model {
 public:
  /// A model named `name` (the prefix of its learned states' parameters) whose parameters hold `dtype`,
  /// initialised from an Rng seeded with `seed`.
  Model(std::string name, DType dtype, std::uint64_t seed);
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }        ///< as given to the constructor
  ParameterStore& params() { return params_; }              ///< its parameters (after build())
  const ParameterStore& params() const { return params_; }  ///< its parameters, read-only
  const std::vector<StateDecl>& states() const { return states_; }  ///< its states, in declaration order
  DType dtype() const { return params_.dtype(); }           ///< its parameters' element type

  // The frames the model reads and the logits it writes, per sample.
  std::int64_t input_rows() const { return input_rows_; }    ///< rows of an input frame
  std::int64_t input_cols() const { return input_cols_; }    ///< columns of an input frame
  std::int64_t output_rows() const { return output_rows_; }  ///< rows of the output logits
  std::int64_t output_cols() const { return output_cols_; }  ///< columns of the output logits

  /// One time step. Read s.input(), s.state(name); write s.next(name, v) and s.output(logits).
  virtual void step(Step& s) = 0;

  /// Scalars the model derives from its learned parameters that are worth reporting, by name (a gamma memory's
  /// μ, learned fast-weight λ and η): `matmem train` prints them at the end of a run and in --json's "learned".
  /// Empty by default and before the parameters exist.
  virtual std::vector<std::pair<std::string, double>> learned_scalars() const { return {}; }

  /// Clips the gradient each time step hands back to the one before through the states: every state the
  /// model keeps in the arena (not one a recomputed chain holds, StateDecl::segment ≠ 1) passes from one step to
  /// the next through clip_gradient(·, c) (ops/ops.hpp; config key clip.state_gradient). 0 (the default): off.
  void set_state_gradient_clip(double c) { state_gradient_clip_ = c; }
  double state_gradient_clip() const { return state_gradient_clip_; }  ///< c, 0: off

  /// What U is in a map of a row into a row (Step::mat and Step::projections of x [B,1,c] into rows: every map
  /// of a vector model): learned, a 1x1 scalar on x V (the matrix form's parameterisation, the default), or one,
  /// held at 1 and no parameter, so y = x V + B, the plain linear map of vector networks (Graves' NTM's). Set
  /// before the parameters exist (build()); config key model.vector_u.
  enum class VectorU { learned, one };
  void set_vector_u(VectorU u);  ///< throws once the parameters exist, if it would change
  VectorU vector_u() const { return vector_u_; }  ///< learned or one

  /// Creates every parameter by running one step on a batch of one (called by run_sequence if needed).
  void build();
  bool built() const { return built_; }    ///< build() has run
  Rng& init_rng() { return init_rng_; }    ///< the Rng parameters are initialised from

 protected:
  /// Sets the per-sample sizes of the input frames (in_rows x in_cols) and of the output logits.
  void set_io(std::int64_t in_rows, std::int64_t in_cols, std::int64_t out_rows, std::int64_t out_cols);
  /// Declares a state (in the constructor): its name must be new, its shape is taken per sample (batch
  /// set to 1), a given start's `initial` must have that shape and the model's dtype, and a learned start
  /// creates its parameter `<model>/init/<name>` now. Throws Error or ShapeError naming the state.
  void declare_state(StateDecl d);

 private:
  friend class Step;
  std::string name_;
  ParameterStore params_;
  std::vector<StateDecl> states_;
  std::vector<Parameter*> state_params_;  // learned starts, by state index
  std::int64_t input_rows_ = 0, input_cols_ = 0, output_rows_ = 0, output_cols_ = 0;
  Rng init_rng_;
  bool built_ = false;
  double state_gradient_clip_ = 0;
  VectorU vector_u_ = VectorU::learned;
};

/// One term of Step::mat: a name for the parameters and the matrix it multiplies.
struct NamedTerm {
  std::string_view name;  ///< the term's name: its parameters are `<path>/<name>/U` and `<path>/<name>/V`
  Var x;                  ///< the matrix [B,r,c] it multiplies
};

/// One single-term mat of Step::projections: mat(path, {x}, rows, cols, bias).
struct ProjectionSpec {
  std::string_view path;            ///< the parameters' path
  std::int64_t rows = 1, cols = 1;  ///< the output's per-sample size
  double bias = 0.0;                ///< the bias's constant start
};

/// One mat of Step::mats: mat(path, terms, rows, cols, bias) with the terms they share.
struct MatSpec {
  std::string_view path;            ///< the parameters' path
  std::int64_t rows = 1, cols = 1;  ///< the output's per-sample size
  double bias = 0.0;                ///< the bias's constant start
};

/// What a Model's step() works with: the time step's input, the states, the parameters by name, and where
/// the next states and the output go.
class Step {
 public:
  /// A step of `model` recording on `tape` (the Unroller makes one).
  Step(Model& model, Tape& tape);

  Tape& tape() { return tape_; }                  ///< the tape the step records on
  std::int64_t batch() const { return batch_; }   ///< B, the sequences run together
  std::int64_t time() const { return time_; }     ///< the time step, from 0

  Var input() const { return input_; }            ///< this time step's input frames [B,input_rows,input_cols]
  /// False at steps whose output nobody reads (no target there): a model may skip computing it.
  bool output_needed() const { return output_needed_; }
  /// The current value of state `name`, [B, …] (its declared per-sample shape, batch B); throws if undeclared.
  Var state(std::string_view name) const;
  /// Sets the value state `name` takes at the next time step; its shape must be the declared one at batch B
  /// (ShapeError naming the model, the state and both shapes).
  void next(std::string_view name, Var value);
  /// Sets this step's output, logits [B,output_rows,output_cols].
  void output(Var logits) { output_ = logits; }
  /// Hands `value` to the observer under `name`, if one watches (Unroller::set_observer); otherwise one test
  /// of a pointer. Names are the model's own, e.g. "write1/weighting"; pass a string kept by the model.
  void expose(std::string_view name, const Var& value) {
    if (observer_) observer_->observe(time_, name, value);
  }
  bool observed() const { return observer_ != nullptr; }  ///< an observer watches
  /// Graph tasks: the neighbours each lane reads in this pass (Sequence::graph); nullptr for other tasks.
  const Neighbours* graph() const { return graph_; }
  void set_graph(const Neighbours* graph) { graph_ = graph; }  ///< set by the Unroller from the Sequence
  void set_observer(StepObserver* observer) { observer_ = observer; }  ///< nullptr: nobody watches

  /// The parameter path/term/leaf (path/leaf when term is empty) of the given shape, created with `init` on
  /// the build pass.
  Var parameter(std::string_view path, std::string_view term, std::string_view leaf, const Shape& shape,
                const Init& init = Init::Glorot());
  /// mat(x_1..x_k) = Σ_t U_tᵀ x_t V_t + B, giving [B, rows, cols]; U_t, V_t Glorot, B constant `bias`.
  /// The parameters are `<path>/<term>/U`, `<path>/<term>/V` and `<path>/B` (no U for a row into a row when
  /// the model holds it at one, Model::VectorU). `bias` std::nullopt: no B
  /// (not created), Σ_t U_tᵀ x_t V_t alone — for a map followed by batch norm, whose mean cancels B.
  Var mat(std::string_view path, std::initializer_list<NamedTerm> terms, std::int64_t rows, std::int64_t cols,
          std::optional<double> bias = 0.0);
  /// mat() with the terms in a span.
  Var mat(std::string_view path, std::span<const NamedTerm> terms, std::int64_t rows, std::int64_t cols,
          std::optional<double> bias = 0.0);
  /// out[k] = mat(p[k].path, {x}, p[k].rows, p[k].cols, p[k].bias) for every k, with the same parameters
  /// created in the same order, computed by ops' projections (one op per 16): several projections of one
  /// state (an NTM's heads) share their first-stage GEMM. Each group's U's are stacked once a pass and every
  /// time step projects through the stack; a row x's projections into rows (a vector NTM's heads) stack the
  /// group's V's instead and run stacked_projections.
  void projections(NamedTerm x, std::span<const ProjectionSpec> p, std::span<Var> out);
  /// out[g] = mat(p[g].path, terms, p[g].rows, p[g].cols, p[g].bias) for every g, with the same parameters
  /// created in the same order: several maps of the same terms (an LSTM's gates). Maps into rows (a vector
  /// model's cell) stack each term's V's once a pass and run one stacked_mats at every time step (ops/ops.hpp);
  /// maps into matrices, or more than one op takes, one mat each.
  void mats(std::span<const NamedTerm> terms, std::span<const MatSpec> p, std::span<Var> out);

  /// Inside the returned scope, the next op recorded writes the next value of state `name` as a link of its
  /// recomputed chain (StateDecl::segment, Tape::chain). Wrap the one op that produces the new value. For a
  /// state whose segment is 1 the scope changes nothing.
  ChainLink link(std::string_view name);
  /// The bytes of ring buffers auto_segment() keeps a chain within.
  static constexpr std::size_t kRingBytes = std::size_t(1) << 20;
  /// The smallest state (bytes per pass) auto_segment() recomputes.
  static constexpr std::size_t kChainMinBytes = std::size_t(128) << 10;
  /// The segment for a state of `bytes` per pass (StateDecl::segment 0): as many as keep the ring buffers
  /// within kRingBytes (a core's L2 holds them), at most 8; 1 (no recomputation) when one does not fit, or
  /// when the state is smaller than kChainMinBytes: a pass's copies of a small state stay in cache anyway, and
  /// the re-runs only add time (the vector NTM's 10 KiB memory: 9% slower per step with recomputation; the
  /// MatNTM's 270 KiB memory, every one of them otherwise written to and read back from memory out of cache:
  /// 3–6% faster, see tools/results/training-speed.md, "Memory recomputation").
  static int auto_segment(std::size_t bytes);

  // Used by Unroller.
  void begin_sequence(std::int64_t batch);  ///< initial states
  /// Starts time step t with its input; `output_needed` as output_needed() reports it.
  void begin_step(std::int64_t t, Var input, bool output_needed);
  void end_step();                          ///< next states become current
  Var last_output() const { return output_; }  ///< the output the last step set

 private:
  struct CachedParam {
    std::uint64_t key;  // hash of path/term/leaf
    Parameter* param;
  };
  Model& model_;
  Tape& tape_;
  std::int64_t batch_ = 1;
  std::int64_t time_ = 0;
  bool output_needed_ = true;
  StepObserver* observer_ = nullptr;
  const Neighbours* graph_ = nullptr;
  std::size_t state_index(std::string_view name) const;  // throws if the model declares no such state
  Var input_, output_;
  std::vector<Var> current_, next_;
  std::vector<std::uint32_t> chains_;  // per state: its chain in this pass, or ChainLink::kNone
  std::vector<CachedParam> cache_;
  std::size_t request_ = 0;
  // V's side by side (a vector-form projections group's, a stacked_mats term's), stacked once a pass: (the
  // first V's node, the stack).
  Var stacked_columns(std::span<const Var> v);
  std::vector<std::pair<std::uint32_t, Var>> stacked_;
  std::size_t stacked_request_ = 0;
  Var unit_u_;  // this pass's constant 1 for a row map's U when the model holds it at one (Model::VectorU)
  std::string name_scratch_;
};

/// What Unroller::run returns: the loss on the tape, the outputs at the target steps and the cost.
struct SequenceResult {
  Var loss;                 ///< [1,1,1], on the tape: backward from it
  std::vector<Var> logits;  ///< the outputs at the target steps
  double bits = 0;          ///< the cost: bit errors per sequence (batch mean), class errors or NMSE by kind
};

/// Unrolls a model over task sequences on a tape (cleared at the start of each run). The loss is the mean
/// over target steps of a per-step loss chosen by the sequence's TargetKind (models/tasks/tasks.hpp): the
/// BCE-with-logits of the output against the target for bits (= the BCE over every target element), the
/// softmax cross-entropy of each output row for classes, the MSE for reals; `bits` is the kind's cost
/// (bit errors, class errors per sequence, or NMSE). A sequence with a lane mask (Sequence::lane_mask) takes
/// the masked mean that Sequence describes instead. Keeps its Step, so repeated runs reuse the parameter
/// cache and allocate nothing.
class Unroller {
 public:
  /// An unroller of `model` on `tape` (builds the model's parameters on the first run if need be).
  Unroller(Model& model, Tape& tape);
  const SequenceResult& run(const Sequence& seq);  ///< valid until the next run
  /// Every later run hands the tensors the model exposes to `observer` (nullptr: nobody watches).
  void set_observer(StepObserver* observer) { step_.set_observer(observer); }

 private:
  Model& model_;
  Tape& tape_;
  Step step_;
  SequenceResult result_;
  std::vector<Var> losses_;
  // Masked runs: each sequence's weight 1/(n_b·B'), or 0.
  std::vector<double> lane_weight_;
  // Real targets: the sums of a sequence's NMSE, Σ (y − t)² / Σ (t − t̄)².
  struct NmseSums {
    double squared_error = 0, target_sum = 0, target_squares = 0;
    std::int64_t count = 0;
    void add(double y, double t) { squared_error += (y - t) * (y - t), target_sum += t, target_squares += t * t, ++count; }
    double nmse() const;
  };
  // Target step k of a masked run: appends its weighted loss to losses_ and adds its cost. The unmasked step
  // (in run()) takes each kind's loss op whole instead: the same value in exact arithmetic, other float sums.
  template <class T>
  void run_masked_step(const Sequence& seq, std::size_t k, Var y, Var target, const T* x, NmseSums& reals,
                       std::int64_t lanes);
};

}  // namespace matmem
