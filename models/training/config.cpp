#include "matmem/models/training/config.hpp"

#include <algorithm>
#include <cmath>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "matmem/models/registry.hpp"
#include "matmem/runtime/error.hpp"

namespace matmem {

using nlohmann::json;

namespace {
// The built-in keys (the training's and the tasks', then the built-in models', then the run's), then those
// registered with register_config_key().
std::vector<ConfigKey>& all_keys() {
  static std::vector<ConfigKey> keys = [] {
  std::vector<ConfigKey> head = {
      {"model", "\"matntm\"", "model: matntm (alias ntm), matdnc, matrnn, matlstm, matgru, gamma, fastweights, irnn, ffn, "
       "autoencoder, cln (graph task), or one registered by the user"},
      {"task", "\"copy\"",
       "task: copy, recall, repeat_copy, priority_sort, ngrams (dynamic N-grams; Graves et al. 2014's tasks, "
       "models/tasks/), keep_discard (keep or discard sub-sequences: freeing memory), delay (delayed recall), "
       "retrieval (associative retrieval), matrix_retrieval (with matrix keys and "
       "values), mackey_glass (series "
       "prediction; models/tasks/), fashion_mnist (image classification), fashion_mnist_ae (corrupted-image "
       "reconstruction; models/data/), data (the user's own sequences from files, task.data; models/data/user_data.hpp) or graph (node classification on a generated graph, the whole graph one "
       "batch: the key batch is not used, micro_batch must be 0 and threads 1)"},
      {"seed", "1", "seed of the run: parameter initialisation and every sequence drawn",
       {.min = 0}},
      {"init", "\"\"",
       "start the model from another run's parameters in place of their initialisation: a run directory (its last "
       "parameters, checkpoint.safetensors) or a checkpoint or best.safetensors file; the same model, every parameter by "
       "name and shape; the optimiser's state, the step and the data are this run's own (\"\": none)"},
      {"steps", "3000", "training steps (one batch each)",
       {.min = 1}},
      {"batch", "16", "sequences per batch",
       {.min = 1}},
      {"optimizer", "\"rmsprop\"", "rmsprop, adam or sgd",
       {.choices = {"rmsprop", "adam", "sgd"}}},
      {"lr", "1e-4", "learning rate",
       {.min = 0, .above = true}},
      {"lr.schedule", "\"constant\"",
       "the learning rate over the run: constant, step (times lr.step_factor every lr.step_every steps) or cosine "
       "(from lr down to lr x lr.cosine_final at the last step; models/training/schedule.hpp)",
       {.choices = {"constant", "step", "cosine"}}},
      {"lr.step_every", "10000", "lr.schedule = step: steps between two decays",
       {.min = 1}},
      {"lr.step_factor", "0.5", "lr.schedule = step: the factor of each decay, in (0, 1]",
       {.min = 0, .max = 1, .above = true}},
      {"lr.cosine_final", "0.0", "lr.schedule = cosine: the last steps' learning rate as a fraction of lr",
       {.min = 0, .max = 1}},
      {"rmsprop.alpha", "0.95", "RMSprop smoothing constant α"},
      {"rmsprop.momentum", "0.9", "RMSprop momentum μ"},
      {"rmsprop.eps", "1e-8", "RMSprop ε (added outside the square root, as PyTorch does)"},
      {"rmsprop.centered", "false", "centered RMSprop"},
      {"rmsprop.eps_inside", "false",
       "add ε inside the square root, √(v − m² + ε) (Graves 2013's form; with rmsprop.centered and rmsprop.eps = 1e-4, "
       "Graves et al. 2014's optimiser; models/training/rmsprop.hpp)"},
      {"adam.beta1", "0.9", "Adam β₁"},
      {"adam.beta2", "0.999", "Adam β₂"},
      {"adam.eps", "1e-8", "Adam ε"},
      {"sgd.momentum", "0.9", "SGD momentum"},
      {"weight_decay", "0.0", "L2 weight decay λ (added to the gradient)"},
      {"loss.reduction", "\"mean\"",
       "the gradient's scale: mean (of the loss per target element) or sequence (of the BCE summed over each "
       "sequence's target elements, batch mean: the cost Graves et al. report; "
       "models/training/trainer.hpp)",
       {.choices = {"mean", "sequence"}}},
      {"clip.value", "10.0", "clip every gradient element to ±value (0: off)",
       {.min = 0}},
      {"clip.norm", "0.0", "clip the global gradient norm to this (0: off)",
       {.min = 0}},
      {"clip.state_gradient", "0.0",
       "clip every element of the gradient a time step hands back through the model's states to ±this, as Graves "
       "2013 clips derivatives inside backpropagation through time (0: off; states a recomputed chain holds are "
       "not clipped; models/core/model.hpp)",
       {.min = 0}},
      {"grad.outlier", "0.0",
       "skip the update of a step whose gradient norm (before clipping) exceeds this many times the running mean of "
       "the norms before it (0: off; models/training/rules/grad_outlier.hpp)"},
      {"grad.outlier_window", "100", "grad.outlier: the running mean's horizon W in steps (β = 1 − 1/W); the rule "
       "acts after W steps",
       {.min = 2}},
      {"lr.solved_below", "0.0",
       "once the mean cost per sequence over a window of lr.solved_window applied steps is below this, the "
       "learning rate is multiplied by lr.solved_factor for the rest of the run (0: off; models/training/rules/lr_solved.hpp)"},
      {"lr.solved_factor", "0.1", "lr.solved_below: the factor, in (0, 1]",
       {.min = 0, .max = 1, .above = true}},
      {"lr.solved_window", "1000", "lr.solved_below: the window's length in applied steps (windows do not overlap)",
       {.min = 1}},
      {"task.rows", "5", "rows r of the task's matrices (1: the vector task)"},
      {"task.cols", "5", "columns c of the task's matrices"},
      {"task.min_length", "1", "copy, repeat_copy: shortest sequence; delay: fewest recalled frames"},
      {"task.max_length", "20", "copy, repeat_copy: longest sequence (the repeat_copy presets: 10); delay: most recalled frames"},
      {"task.min_repeats", "1", "repeat_copy: fewest repeats (the range also normalises the repeat count)"},
      {"task.max_repeats", "10", "repeat_copy: most repeats"},
      {"task.size_by", "\"length\"",
       "repeat_copy: what a size is (curriculum, `matmem eval --sizes`): length or repeats"},
      {"task.fixed_size", "0",
       "repeat_copy: hold the dimension that is not the size at this (0: draw it from its range); e.g. `matmem eval "
       "--set task.fixed_size=10` evaluates over lengths with 10 repeats"},
      {"task.min_subsequences", "5", "keep_discard: fewest sub-sequences (the size: curriculum, `matmem eval --sizes`)"},
      {"task.max_subsequences", "7", "keep_discard: most sub-sequences"},
      {"task.keep", "2",
       "keep_discard: sub-sequences a sequence marks keep, copied back at the end (1 to task.min_subsequences); the "
       "others are discard, copied back right after their delimiter"},
      {"task.keep_first", "true",
       "keep_discard: the first sub-sequence is always keep, so every matrix is written after the first keep one "
       "(false: the keep ones anywhere)"},
      {"task.min_keep_length", "2", "keep_discard: fewest matrices a keep sub-sequence"},
      {"task.max_keep_length", "3", "keep_discard: most matrices a keep sub-sequence"},
      {"task.min_discard_length", "6",
       "keep_discard: fewest matrices a discard sub-sequence (more than a controller holds in its state)"},
      {"task.max_discard_length", "8",
       "keep_discard: most matrices a discard sub-sequence (defaults for 16 slots: keep frames and one discard ≤ 14, "
       "frames in all ≥ 22; models/tasks/keep_discard.hpp)"},
      {"task.inputs", "20", "priority_sort: matrices in, each with its priority"},
      {"task.outputs", "16", "priority_sort: the highest-priority matrices written, in descending order"},
      {"task.order", "6", "ngrams: the N-gram order N (contexts of N−1 bits)"},
      {"task.bits", "200", "ngrams: bits a sequence"},
      {"task.delay", "5", "delay: the target is the input of this many steps ago",
       {.min = 1}},
      {"task.min_items", "2", "recall: fewest items"},
      {"task.max_items", "10", "recall: most items"},
      {"task.item_matrices", "2", "recall: matrices per item"},
      {"task.pairs", "4", "retrieval: letter–digit pairs before the query (1..26); matrix_retrieval: key–value pairs (task.rows x task.cols binary matrices)"},
      {"task.fixed", "false",
       "retrieval: a fixed data set in train/validation/test parts, read by epochs (Ba et al.'s protocol), instead "
       "of fresh strings every step"},
      {"task.train_strings", "100000", "retrieval, task.fixed: training strings",
       {.min = 0}},
      {"task.validation_strings", "10000", "retrieval, task.fixed: validation strings (early stopping)",
       {.min = 0}},
      {"task.test_strings", "20000", "retrieval, task.fixed: test strings (the end report, `matmem eval`)",
       {.min = 0}},
      {"task.data_seed", "1",
       "retrieval, task.fixed: seed of the data set, apart from the run's seed (which orders the epochs), so every "
       "model seed sees the same strings",
       {.min = 0}},
      {"task.horizon", "1", "mackey_glass: predict the sample this many steps ahead"},
      {"task.graph.nodes", "2708", "graph: nodes of the generated citation-like graph (models/tasks/graph.hpp)"},
      {"task.graph.classes", "7", "graph: classes (blocks of the stochastic block model), equal sizes"},
      {"task.graph.degree", "4.0", "graph: mean degree 2·edges/nodes"},
      {"task.graph.homophily", "0.8", "graph: share of the edges that join two nodes of one class"},
      {"task.graph.words", "1433", "graph: words of the bag-of-words features"},
      {"task.graph.words_per_node", "18", "graph: words a node draws (with replacement)"},
      {"task.graph.topic_words", "100", "graph: words of each class's own topic"},
      {"task.graph.feature_signal", "0.2", "graph: probability that a word is drawn from the node's class topic"},
      {"task.graph.test", "1000", "graph: test nodes"},
      {"task.graph.validation", "100", "graph: validation nodes (the rest train)"},
      {"task.graph.seed", "1", "graph: seed of the generated graph, features and splits (apart from the run's seed)",
       {.min = 0}},
      {"task.graph.feature_rows", "1", "graph: a node's words as a matrix of this many rows, row-major (1: the vector)"},
      {"task.graph.sample", "50", "graph: neighbours sampled per node and training step (0: all)"},
      {"task.data_dir", "\"/usr/share/datasets/fashion-mnist\"",
       "fashion_mnist: directory of the IDX files (Debian's dataset-fashion-mnist installs them here)"},
      {"task.train", "55000", "fashion_mnist: training images (of the 70,000, after a seeded shuffle)",
       {.min = 1}},
      {"task.validation", "5000", "fashion_mnist: validation images (early stopping)",
       {.min = 0}},
      {"task.test", "10000", "fashion_mnist: test images (`matmem eval`)",
       {.min = 0}},
      {"task.split_seed", "1", "fashion_mnist: seed of the train/validation/test split (the run's seed orders the epochs)",
       {.min = 0}},
      {"task.flatten", "false",
       "every input frame and target one row, 1 x r·c (models/tasks/flat_frames.hpp): a vector model then maps each "
       "element with weights of its own, as Graves' NTM its input channels; fashion_mnist: images 1x784 instead of "
       "28x28. Not for class targets or data read from files"},
      {"task.noise", "0.2", "fashion_mnist_ae: training inputs have each pixel set to 0 with this probability",
       {.min = 0, .max = 1, .below = true}},
      {"task.data", "\"\"",
       "data: directory of the user's sequences: train.safetensors, validation.safetensors, test.safetensors "
       "(tensors inputs [N,T,r,c], targets, mask [N,T]), or train/, validation/, test/ holding inputs.npy, "
       "targets.npy, mask.npy (models/README.md, \"Your own data\")"},
      {"task.loss", "\"bce\"",
       "data: bce (targets in [0,1], cost bit errors), mse (real targets, cost NMSE) or softmax_ce (integer class "
       "targets [N,T] or [N,T,r'], cost class errors)"},
      {"task.classes", "0", "data, task.loss = softmax_ce: the classes C (0: the largest class in the files + 1)",
       {.min = 0, .note = "0: from the files"}},
      {"epochs", "0", "data sets: train this many epochs (replaces steps by epochs x floor(task.train / batch); --steps sets it to 0); 0: by steps",
       {.min = 0, .note = "0: steps counts"}},
      {"eval.interval", "0",
       "evaluate the held-out data every this many steps (a data set's or the graph's validation part; a generated "
       "task's eval.batches held-out batches), keeping the parameters of the best evaluation in best.safetensors "
       "(0: never; models/training/README.md)",
       {.min = 0, .note = "0: no evaluation"}},
      {"eval.patience", "0",
       "stop after this many evaluations of the held-out data without a new best (0: never stop early)",
       {.min = 0, .note = "0: never stop early"}},
      {"eval.metric", "\"error\"",
       "what early stopping and the best parameters go by: error (the error rate, the NMSE, or a generated task's "
       "cost per sequence) or loss, on the held-out data",
       {.choices = {"error", "loss"}}},
      {"eval.batch", "500", "data sets: images per batch when evaluating a whole part (a graph's parts are read whole)",
       {.min = 1}},
      {"eval.batches", "10",
       "generated tasks, eval.interval > 0: held-out batches of `batch` sequences at the task's own sizes, drawn once "
       "at the start from eval.seed, the same at every evaluation (1 to 100000)",
       {.min = 1, .max = 100000}},
      {"eval.seed", "1000",
       "generated tasks: seed of the held-out batches, apart from the run's seed and from `matmem eval`'s (2024), so "
       "the best parameters are not chosen on the test draw",
       {.min = 0}},
      {"model.layers", "\"15x15,15x15\"", "recurrent layers (controller layers for matntm, dense layers for gamma) as RxC, comma separated"},
      {"model.vector_u", "\"learned\"",
       "a map of a row into a row (every map of a vector model, rows 1): its 1x1 U learned, a scalar on x V (the "
       "matrix form's parameterisation), or one: held at 1, y = x V + B, the plain linear map of vector networks "
       "such as Graves' NTM (models/core/model.hpp)",
       {.choices = {"learned", "one"}}},
  };
  // Each built-in model's keys (lstm.*, rnn.*, ffn.*, gamma.*, fw.*, irnn.*, cln.*, ntm.*, controller.*, dnc.*)
  // are declared beside its factory, in models/registry.cpp.
  const std::vector<ConfigKey>& models = builtin_model_keys();
  head.insert(head.end(), models.begin(), models.end());
  std::vector<ConfigKey> tail = {
      {"log_every", "50", "steps between rows of metrics.csv and progress updates",
       {.min = 1}},
      {"checkpoint_every", "500", "steps between checkpoints (0: only at the end)",
       {.min = 0}},
      {"threads", "1",
       "threads a training step splits its batch over (at most one per 4 sequences; the sums then round "
       "differently from one thread's; see models/training/trainer.hpp)",
       {.min = 1}},
      {"micro_batch", "16",
       "run a step's batch (each thread's part) as micro-batches of this many sequences, gradients added (0: all "
       "at once; a batch of 256 ran 2.6x faster in micro-batches of 16; see models/training/trainer.hpp)",
       {.min = 0, .note = "0: the whole batch at once"}},
      {"micro_batch.state_kib", "320",
       "halve micro_batch until a micro-batch's largest state (an NTM memory: slots x rows x cols floats per "
       "sequence) takes at most this many KiB, so it stays in the core's L2 (0: no limit)",
       {.min = 0, .note = "0: no limit"}},
      {"curriculum.threshold", "0.0",
       "curriculum: sizes (recall items, copy lengths) start at the smallest and the largest drawn grows by one each "
       "time a window's mean cost per sequence falls below this (0: no curriculum; models/training/rules/curriculum.hpp)"},
      {"curriculum.window", "1000", "curriculum: steps whose mean cost decides whether the largest size grows",
       {.min = 1}},
      {"curriculum.start", "0", "curriculum: the largest size drawn at first (0: the task's smallest)"},
      {"anomaly", "false", "anomaly mode: check every op for NaN/Inf (slower)"},
      {"flush_denormals", "true",
       "training and evaluation flush subnormal floats to zero (x86's flush-to-zero and denormals-are-zero): a "
       "trained model's subnormal values otherwise slow its steps severalfold; false keeps IEEE subnormals "
       "(runtime/float_env.hpp)"},
      {"dtype", "\"float32\"",
       "the precision a run trains in: its parameters, values, gradients and optimiser state (float64 takes "
       "about twice the time and memory: for telling a run's float32 rounding and overflow from its dynamics)",
       {.choices = {"float32", "float64"}}},
      {"nonfinite", "\"stop\"",
       "a step whose loss, gradient or update is NaN/Inf: stop (with an error naming the step and the op; an update "
       "is then taken in place, in part) or skip (it changes nothing; count it and go on)",
       {.choices = {"stop", "skip"}}},
      {"nonfinite.max_skips", "10", "nonfinite = skip: stop once more than this many steps were skipped",
       {.min = 0}},
      {"memory.check", "true",
       "refuse a run whose estimated memory at its longest sequence exceeds the machine's available memory"},
      {"plugins", "\"\"",
       "the plugins the run was trained with, absolute paths separated by ':' (recorded by `matmem train` from "
       "--plugin and MATMEM_PLUGINS; a resume or eval needs them loaded)"},
  };
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
  }();
  return keys;
}
}  // namespace

std::string describe_range(const KeyRange& r) {
  std::string text;
  if (!r.choices.empty()) {
    for (std::size_t n = 0; n < r.choices.size(); ++n)
      text += (n == 0 ? "" : n + 1 == r.choices.size() ? " or " : ", ") + ("\"" + r.choices[n] + "\"");
  } else if (r.min && r.max && !r.above && !r.below) {
    text = fmt::format("from {} to {}", *r.min, *r.max);
  } else if (r.min && r.max) {
    text = fmt::format("in {}{}, {}{}", r.above ? "(" : "[", *r.min, *r.max, r.below ? ")" : "]");
  } else if (r.min) {
    text = fmt::format("{} {}", r.above ? ">" : "≥", *r.min);
  } else if (r.max) {
    text = fmt::format("{} {}", r.below ? "<" : "≤", *r.max);
  } else {
    return "";
  }
  return r.note.empty() ? text : text + " (" + r.note + ")";
}

void check_config(const Config& c) {
  for (const ConfigKey& k : config_keys()) {
    const KeyRange& r = k.range;
    if (!r.choices.empty()) {
      const std::string v = c.str(k.key);
      if (std::find(r.choices.begin(), r.choices.end(), v) != r.choices.end()) continue;
      throw Error(fmt::format("config: {} = \"{}\" must be {}", k.key, v, describe_range(r)));
    }
    if (!r.min && !r.max) continue;
    const bool integer = c.values().at(k.key).is_number_integer();
    const double v = integer ? double(c.integer(k.key)) : c.num(k.key);
    const bool low = r.min && (r.above ? !(v > *r.min) : !(v >= *r.min)),
               high = r.max && (r.below ? !(v < *r.max) : !(v <= *r.max));
    if (!low && !high && std::isfinite(v)) continue;
    throw Error(fmt::format("config: {} = {} must be {}", k.key,
                            integer ? std::to_string(c.integer(k.key)) : fmt::format("{}", v), describe_range(r)));
  }
}

const std::vector<ConfigKey>& config_keys() { return all_keys(); }

void register_config_key(ConfigKey key) {
  if (key.key.empty()) throw Error("a config key needs a name");
  for (const ConfigKey& k : all_keys())
    if (k.key == key.key) throw Error(fmt::format("a config key named {} is already registered", key.key));
  json v;
  try {
    v = json::parse(key.default_json);
  } catch (const json::exception& e) {
    throw Error(fmt::format("config key {}: its default {} is not JSON: {}", key.key, key.default_json, e.what()));
  }
  if (!v.is_boolean() && !v.is_number() && !v.is_string())
    throw Error(fmt::format("config key {}: its default {} must be a boolean, a number or a string", key.key,
                            key.default_json));
  all_keys().push_back(std::move(key));
}

DType training_dtype(const Config& config) { return config.str("dtype") == "float64" ? DType::f64 : DType::f32; }

const std::vector<Preset>& presets() {
  // 000 Table 1 and spec/models.md ("Defaults"); the vector NTM with pytorch-ntm's copy settings.
  static const std::vector<Preset> all = {
      {"matntm", "copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "ntm.slots": 120,
        "ntm.slot_rows": 6, "ntm.slot_cols": 6, "batch": 16, "lr": 1e-4})"},
      // Table 1's sizes; the training of models/results/convergence.md (recall): a MatLSTM controller (its
      // forget gates at the default bias -1), lr 3e-4 with clip.norm 10 (Table 1: a MatRNN controller, lr 8e-5,
      // no clipping), a step whose gradient overflows skipped; 20,000 steps, as Table 1; the learning rate × 0.1
      // once a 1,000-step window's mean is below 1 bit (models/results/stability.md: on seeds 6–12, 5 of 7
      // solved and none collapsed, against 2 of 7 and 4 collapses without).
      // Recall trains one sequence an update from a learned memory (models/results/stability.md: 6 of 7 report
      // seeds solved, none collapsed, against 5 of 7 at batches of 16); the batch-16 protocol is
      // models/configs/matntm_recall_batch16.json.
      {"matntm", "recall", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5, "ntm.slots": 120,
        "ntm.slot_rows": 6, "ntm.slot_cols": 6, "batch": 1, "ntm.controller": "lstm", "ntm.memory_init": "learned",
        "lr": 1e-4, "clip.norm": 10.0, "steps": 320000, "nonfinite": "skip", "nonfinite.max_skips": 1000,
        "log_every": 1000, "checkpoint_every": 20000, "eval.batches": 160, "lr.solved_below": 1})"},
      // Graves et al. 2014's other tasks (models/tasks/repeat_copy.hpp, priority_sort.hpp, ngrams.hpp) at the copy
      // and recall presets' matrix sizes; clip.norm 10 as recall's.
      // Repeat copy trains one sequence an update from a learned memory, RMSprop ε 1e-4 and the rate × 0.1 once a
      // 1,000-sequence mean is below 2 bits, 800,000 sequences (models/results/stability.md: 6 of 7 report seeds
      // solved, 1 collapsed, best below 1 bit on 7 of 7, against 3 of 7, 2 and 6 of 7 at batches of 16); the
      // batch-16 protocol is models/configs/matntm_repeat_copy_batch16.json.
      {"matntm", "repeat_copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "task.max_length": 10,
        "ntm.slots": 120, "ntm.slot_rows": 6, "ntm.slot_cols": 6, "batch": 1, "ntm.memory_init": "learned", "lr": 1e-4,
        "clip.norm": 10.0, "rmsprop.eps": 1e-4, "lr.solved_below": 2, "steps": 800000, "log_every": 1000,
        "checkpoint_every": 20000, "eval.batches": 160})"},
      // Priority sort trains one sequence an update from a learned memory with Graves et al.'s 5 + 5 heads, lr 3e-4
      // and the rate × 0.1 once a 1,000-sequence mean is below 40 bits wrong, 1,000,000 sequences
      // (models/results/stability.md#priority-sort: 34.33 / 23.47 / 53.63 bits wrong on report seeds 6–8, against
      // 66.6 / 112.0 / 104.0 at batches of 16 with one head a side); the batch-16 protocol is
      // models/configs/matntm_priority_sort_batch16.json.
      {"matntm", "priority_sort", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "ntm.slots": 120,
        "ntm.slot_rows": 6, "ntm.slot_cols": 6, "ntm.read_heads": 5, "ntm.write_heads": 5, "batch": 1,
        "ntm.memory_init": "learned", "lr": 3e-4, "clip.norm": 10.0, "lr.solved_below": 40, "steps": 1000000,
        "log_every": 1000, "checkpoint_every": 20000, "eval.batches": 160})"},
      {"matntm", "ngrams", R"({"model.layers": "10x10", "ntm.slots": 64, "ntm.slot_rows": 4, "ntm.slot_cols": 4,
        "batch": 16, "lr": 1e-4, "clip.norm": 10.0})"},
      // The MatNTM copy preset's sizes with 16 slots, the memory the keep/discard task is made for
      // (models/tasks/keep_discard.hpp): the baseline of the MatDNC's keep_discard preset.
      {"matntm", "keep_discard", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "ntm.slots": 16,
        "ntm.slot_rows": 6, "ntm.slot_cols": 6, "batch": 16, "lr": 1e-4})"},
      // The MatDNC at the MatNTM presets' controllers (but recall's, below) and 6×6 slots, each with fewer
      // parameters than the MatNTM preset of its task (models/results/dnc.md): slots enough for the frames a
      // sequence must hold (copy and priority sort 20, recall 20 item matrices), 16 (DeepMind's) where they are
      // fewer; clip.norm 10. lr 3e-4 chosen against 1e-4 on seeds 1–5: copy under 1 bit from 1,300–1,450 steps
      // (1,850–2,000); repeat copy 4.5–10.1 bits at 12,500 steps (4.1–307). Priority sort takes 1e-4, chosen on
      // seeds 1–5 at 62,500 steps: 15–88 bits against 63–200. Keep/discard takes 1e-4, chosen on seeds 1–5 against
      // 3e-4, Adam 1e-4 and 3e-4, and grad.outlier 10: the lowest median at 25,000 steps, 147 bits (lr 3e-4: 200),
      // none solved.
      {"matdnc", "copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "dnc.controller": "rnn",
        "dnc.slots": 32, "dnc.slot_rows": 6, "dnc.slot_cols": 6, "batch": 16, "lr": 3e-4, "clip.norm": 10.0})"},
      // Priority sort trains one sequence an update at lr 1e-4 with de-allocation (a freed slot's content erased:
      // the model reads the highest priority left and frees its slot) and the rate × 0.1 once a 1,000-sequence mean
      // is below 40 bits wrong, non-finite steps skipped, 1,000,000 sequences (models/results/dnc.md#priority-sort:
      // 5.08 / 12.69 / 9.41 bits wrong on report seeds 6–8, none falling, against 10.90 / 79.28 / 62.40 without
      // de-allocation, models/configs/matdnc_priority_sort_no_deallocation.json); the batch-16 protocol is
      // models/configs/matdnc_priority_sort_batch16.json.
      {"matdnc", "priority_sort", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5,
        "dnc.controller": "rnn", "dnc.slots": 32, "dnc.slot_rows": 6, "dnc.slot_cols": 6, "batch": 1, "lr": 1e-4,
        "clip.norm": 10.0, "dnc.cosine_eps": 0, "dnc.deallocation": true, "lr.solved_below": 40, "nonfinite": "skip",
        "nonfinite.max_skips": 1000, "steps": 1000000, "log_every": 1000, "checkpoint_every": 20000,
        "eval.batches": 160})"},
      // Repeat copy trains one sequence an update at lr 1e-4 with masked content lookup and the rate × 0.1 once a
      // 1,000-sequence mean is below 1 bit, 800,000 sequences (models/results/dnc.md: 3 of 3 report seeds below
      // 1 bit by 200,000 and at the end, none collapsed, against 0 of 3 at batches of 16); the batch-16
      // protocol is models/configs/matdnc_repeat_copy_batch16.json.
      {"matdnc", "repeat_copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5,
        "task.max_length": 10, "dnc.controller": "rnn", "dnc.slots": 16, "dnc.slot_rows": 6, "dnc.slot_cols": 6,
        "batch": 1, "lr": 1e-4, "clip.norm": 10.0, "dnc.cosine_eps": 0, "dnc.masked_lookup": true,
        "lr.solved_below": 1, "steps": 800000, "log_every": 1000, "checkpoint_every": 20000, "eval.batches": 160})"},
      {"matdnc", "keep_discard", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5,
        "dnc.controller": "rnn", "dnc.slots": 16, "dnc.slot_rows": 6, "dnc.slot_cols": 6, "batch": 16, "lr": 1e-4,
        "clip.norm": 10.0})"},
      // Recall trains one sequence an update at lr 1e-4 with masked content lookup, the copy preset's MatRNN
      // controller of two 15×15 layers and the rate × 0.1 once a 1,000-sequence mean is below 1 bit, 200,000
      // sequences (models/results/dnc.md: 0.06 / 0.03 / 0.04 bits on report seeds 6–8, below 1 bit from
      // 29,000–32,000 sequences, none collapsed, against 8.9–10.3 at batches of 16 with three MatLSTM layers); the
      // batch-16 protocol is models/configs/matdnc_recall_batch16.json.
      {"matdnc", "recall", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5,
        "dnc.controller": "rnn", "dnc.slots": 32, "dnc.slot_rows": 6, "dnc.slot_cols": 6, "batch": 1, "lr": 1e-4,
        "clip.norm": 10.0, "dnc.cosine_eps": 0, "dnc.masked_lookup": true, "lr.solved_below": 1, "steps": 200000,
        "nonfinite": "skip", "nonfinite.max_skips": 1000, "log_every": 1000, "checkpoint_every": 20000,
        "eval.batches": 160})"},
      {"matlstm", "repeat_copy", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5,
        "task.max_length": 10, "batch": 16, "lr": 1e-4, "clip.norm": 10.0})"},
      {"matlstm", "priority_sort", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5, "batch": 16,
        "lr": 1e-4, "clip.norm": 10.0})"},
      {"matlstm", "ngrams", R"({"model.layers": "10x10,10x10", "batch": 16, "lr": 1e-4, "clip.norm": 10.0})"},
      {"matrnn", "copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 1e-4})"},
      {"matlstm", "copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 1e-4})"},
      {"matgru", "copy", R"({"model.layers": "15x15,15x15", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 1e-4})"},
      {"matrnn", "recall", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 8e-5})"},
      {"matlstm", "recall", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 8e-5})"},
      {"matgru", "recall", R"({"model.layers": "20x20,20x20,20x20", "task.rows": 5, "task.cols": 5, "batch": 16, "lr": 8e-5})"},
      {"fastweights", "retrieval", R"({"model.layers": "1x50", "task.pairs": 4, "batch": 128, "optimizer": "adam",
        "lr": 1e-4})"},
      {"gamma", "mackey_glass", R"({"task.min_length": 20, "task.max_length": 50, "gamma.taps": 4, "model.layers": "1x10",
        "optimizer": "adam", "lr": 1e-3})"},
      {"gamma", "delay", R"({"model.layers": "10x10", "gamma.taps": 4, "optimizer": "adam", "lr": 3e-3})"},
      {"cln", "graph", R"({"model.layers": "10x10", "optimizer": "adam", "lr": 1e-2, "weight_decay": 5e-4,
        "steps": 100, "micro_batch": 0, "log_every": 1, "checkpoint_every": 0, "clip.value": 0,
        "eval.interval": 1, "eval.patience": 10, "eval.metric": "loss"})"},
      {"ffn", "fashion_mnist", R"({"model.layers": "20x20", "ffn.depth": 10, "batch": 64, "optimizer": "adam", "lr": 1e-3,
        "clip.value": 0, "micro_batch": 0, "epochs": 5, "eval.interval": 200, "eval.patience": 10, "log_every": 100,
        "checkpoint_every": 1000})"},
      {"autoencoder", "fashion_mnist_ae", R"({"model.layers": "20x20", "ffn.depth": 20, "ffn.activation": "tanh",
        "batch": 64, "optimizer": "adam", "lr": 1e-3, "clip.value": 0, "micro_batch": 0, "epochs": 5,
        "eval.interval": 200, "eval.patience": 10, "log_every": 100, "checkpoint_every": 1000})"},
      {"irnn", "retrieval", R"({"model.layers": "1x50", "task.pairs": 4, "batch": 128, "optimizer": "adam", "lr": 1e-4})"},
  };
  return all;
}

struct Config::Impl {
  json values = json::object();
};

Config::Config() : impl_(new Impl) {
  for (const ConfigKey& k : config_keys()) impl_->values[k.key] = json::parse(k.default_json);
}
Config::Config(const Config& o) : impl_(new Impl(*o.impl_)) {}
Config& Config::operator=(const Config& o) {
  *impl_ = *o.impl_;
  return *this;
}
Config::~Config() { delete impl_; }

namespace {
std::string kind_of(const json& v) {
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  return "JSON " + std::string(v.type_name());
}
std::string closest_key(const std::string& key) {
  // The known key sharing the longest prefix, as a hint.
  std::string best;
  std::size_t best_len = 0;
  for (const ConfigKey& k : config_keys()) {
    std::size_t n = 0;
    while (n < k.key.size() && n < key.size() && k.key[n] == key[n]) ++n;
    if (n > best_len) {
      best_len = n;
      best = k.key;
    }
  }
  return best_len >= 3 ? fmt::format(" (did you mean {}?)", best) : "";
}
}  // namespace

void Config::set_json(const std::string& key, const json& value, const std::string& where) {
  auto it = impl_->values.find(key);
  if (it == impl_->values.end() && key == "task.graph.patience")  // a key of earlier versions
    throw Error(fmt::format("{}: task.graph.patience is now eval.patience (the graph preset evaluates every step, "
                            "eval.interval 1, and goes by the validation loss, eval.metric loss)", where));
  if (it == impl_->values.end())
    throw Error(fmt::format("{}: unknown config key {}{}; `matmem train --help-config` lists them", where, key,
                            closest_key(key)));
  // Every value is written back as JSON (config.json, the checkpoint's metadata): a string that is not UTF-8
  // is refused here, naming the key, rather than failing there.
  try {
    (void)value.dump();
  } catch (const json::type_error&) {
    throw Error(fmt::format("{}: {} must be UTF-8 text", where, key));
  }
  const json& old = *it;
  const bool ok = (old.is_boolean() && value.is_boolean()) || (old.is_string() && value.is_string()) ||
                  ((old.is_number_integer() || old.is_number_unsigned()) &&
                   (value.is_number_integer() || value.is_number_unsigned())) ||
                  (old.is_number_float() && value.is_number());
  if (!ok)
    throw Error(fmt::format("{}: {} must be {}, got {} ({})", where, key, kind_of(old), kind_of(value), value.dump()));
  *it = old.is_number_float() ? json(value.get<double>()) : value;
  if (key == "model") *it = canonical_model_name(value.get<std::string>());  // `ntm` is stored as `matntm`
}

void Config::set(const std::string& key, const std::string& value, const std::string& where) {
  json v;
  try {
    v = json::parse(value);
  } catch (const json::out_of_range&) {  // a number JSON cannot hold, like 1e999
    throw Error(fmt::format("{}: {} = {} is out of range", where, key, value));
  } catch (const json::parse_error&) {
    v = value;  // a bare word is a string
  }
  set_json(key, v, where);
}

void Config::assign(const std::string& assignment, const std::string& where) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw Error(fmt::format("{} {}: expected key=value", where, assignment));
  set(assignment.substr(0, eq), assignment.substr(eq + 1), fmt::format("{} {}", where, assignment));
}

void Config::merge_json_text(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw Error(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: must be a JSON object of config keys", where));
  for (auto it = j.begin(); it != j.end(); ++it) set_json(it.key(), it.value(), where);
}

void Config::merge_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("config file {}: cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  merge_json_text(ss.str(), fmt::format("config file {}", path));
}

void Config::apply_preset(const std::string& model, const std::string& task) {
  for (const Preset& p : presets())
    if (p.model == model && p.task == task) merge_json_text(p.json, fmt::format("preset {}-{}", model, task));
}

Config Config::resolve(const std::function<void(Config&)>& layers) {
  Config probe;
  layers(probe);
  Config c;
  c.apply_preset(probe.str("model"), probe.str("task"));
  layers(c);
  return c;
}

namespace {
const json& get(const json& values, const std::string& key) {
  auto it = values.find(key);
  if (it == values.end()) throw Error(fmt::format("config: no key {}", key));
  return *it;
}
}  // namespace

std::string Config::str(const std::string& key) const { return get(impl_->values, key).get<std::string>(); }
double Config::num(const std::string& key) const { return get(impl_->values, key).get<double>(); }
std::int64_t Config::integer(const std::string& key) const { return get(impl_->values, key).get<std::int64_t>(); }
bool Config::flag(const std::string& key) const { return get(impl_->values, key).get<bool>(); }

std::vector<std::pair<std::int64_t, std::int64_t>> Config::sizes(const std::string& key) const {
  const std::string text = str(key);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    long long r = 0, c = 0;
    char x = 0, extra = 0;
    if (std::sscanf(item.c_str(), " %lld %c %lld %c", &r, &x, &c, &extra) != 3 || (x != 'x' && x != 'X') || r < 1 || c < 1)
      throw Error(fmt::format("config: {} = \"{}\": each size must be RxC with R, C ≥ 1 (like 15x15)", key, text));
    out.push_back({r, c});
  }
  if (out.empty()) throw Error(fmt::format("config: {} is empty", key));
  return out;
}

std::string Config::dump() const { return impl_->values.dump(2); }
const json& Config::values() const { return impl_->values; }

}  // namespace matmem
