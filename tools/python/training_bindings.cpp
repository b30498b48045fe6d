// Config and Trainer from Python (tools/python/README.md, "Models and training").
//
// A Trainer's step releases the GIL while C++ runs: worker threads (threads > 1) and a Python model's step
// take it when they call Python. Checkpoints as dicts hold exactly what Trainer::save writes
// (models/training/trainer.hpp): "param/<name>" and "optim/<name>/<slot>" arrays, and "meta/<key>" strings
// (step, the data Rng's state, the optimiser's step count, the curriculum, the config); they go through the
// same save() and resume(), so a run resumed from a dict continues bit for bit.
#include <filesystem>
#include <random>

#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "matmem/models/training/config.hpp"
#include "matmem/models/training/trainer.hpp"
#include "matmem/runtime/error.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tools/python/convert.hpp"
#include "matmem/tools/python/model_bindings.hpp"

namespace matmem::python {

namespace {

namespace fs = std::filesystem;

// A fresh directory under the system's temporary one, removed with this object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    for (int k = 0; k < 100; ++k) {
      path = fs::temp_directory_path() / ("matmem-py-" + std::to_string(rd()) + std::to_string(rd()));
      if (fs::create_directory(path)) return;
    }
    throw Error("could not make a temporary directory in " + fs::temp_directory_path().string());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

py::object json_loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

Config config_of(const py::object& obj) {
  if (py::isinstance<Config>(obj)) return obj.cast<Config>();
  if (!py::isinstance<py::dict>(obj))
    throw py::type_error("expected a matmem.Config or a dict of config keys, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  const std::string text = py::str(py::module_::import("json").attr("dumps")(obj));
  return Config::resolve([&](Config& c) { c.merge_json_text(text, "matmem.Config"); });
}

py::dict stats_dict(const StepStats& s) {
  py::dict d;
  d["loss"] = s.loss;
  d["bits"] = s.bits;
  d["grad_norm"] = s.grad_norm;
  d["frames"] = s.frames;
  d["skipped"] = s.skipped;
  d["nonfinite"] = s.nonfinite;
  return d;
}

Split split_of(const std::string& s) {
  if (s == "train") return Split::train;
  if (s == "validation") return Split::validation;
  if (s == "test") return Split::test;
  throw py::value_error("split: train, validation or test, not " + s);
}

py::dict checkpoint_dict(const Trainer& t) {
  TempDir dir;
  t.save(dir.path.string());
  const TensorFile f = read_safetensors((dir.path / "checkpoint.safetensors").string());
  py::dict d;
  for (const auto& [name, tensor] : f.tensors) d[py::str(name)] = to_array(tensor);
  for (const auto& [key, value] : f.metadata) d[py::str("meta/" + key)] = value;
  return d;
}

std::unique_ptr<Trainer> trainer_from_dict(const py::dict& d, std::int64_t steps, std::int64_t threads,
                                           const std::vector<std::string>& sets) {
  TensorFile f;
  for (auto [k, v] : d) {
    const std::string key = py::str(k);
    if (key.rfind("meta/", 0) == 0) {
      f.metadata[key.substr(5)] = py::str(v);
    } else if (key.rfind("param/", 0) == 0 || key.rfind("optim/", 0) == 0) {
      f.tensors.emplace(key, to_tensor(v, "checkpoint " + key));
    } else {
      throw py::key_error("checkpoint: key " + key + " is not param/…, optim/… or meta/…");
    }
  }
  TempDir dir;
  write_safetensors((dir.path / "checkpoint.safetensors").string(), f);
  return Trainer::resume(dir.path.string(), steps, threads, nullptr, sets);
}

}  // namespace

void bind_training(py::module_& m) {
  py::class_<Config>(m, "Config", R"(A training run's resolved config (models/training/config.hpp).

Config(dict): the defaults, the preset of the dict's model and task, then the dict's keys (as `matmem train
--set key=value`); an unknown key or a bad value raises matmem.Error naming it.)")
      .def(py::init([](const py::object& d) { return config_of(d.is_none() ? py::dict() : d); }),
           py::arg("keys") = py::none())
      .def("__getitem__", [](const Config& c, const std::string& key) {
        const auto& v = c.values();
        if (!v.contains(key)) throw py::key_error("no config key " + key);
        return json_loads(v[key].dump());
      })
      .def("__contains__", [](const Config& c, const std::string& key) { return c.values().contains(key); })
      .def("to_dict", [](const Config& c) { return json_loads(c.values().dump()); })
      .def("dump", &Config::dump)
      .def_static("keys", [] {
        py::dict d;
        for (const ConfigKey& k : config_keys()) d[py::str(k.key)] = py::make_tuple(json_loads(k.default_json), k.doc);
        return d;
      }, "Every key: (default, doc).");

  py::class_<Trainer>(m, "Trainer", R"(Trains one model on one task (models/training/trainer.hpp).

Trainer(config): a matmem.Config or a dict of config keys. step() runs one step with the GIL released;
train(steps, callback, every) runs several; checkpoint() / Trainer.from_checkpoint(d) go through dicts of
arrays and strings, save(dir) / Trainer.resume(dir) through files.)")
      .def(py::init([](const py::object& c) { return std::make_unique<Trainer>(config_of(c)); }), py::arg("config"))
      .def(
          "step",
          [](Trainer& t) {
            StepStats s;
            {
              py::gil_scoped_release release;
              s = t.step();
            }
            return stats_dict(s);
          },
          "One training step; returns its stats (loss, bits, grad_norm, frames, skipped, nonfinite).")
      .def(
          "train",
          [](Trainer& t, std::int64_t steps, const py::object& callback, std::int64_t every) {
            if (every < 1) throw py::value_error("train: every must be ≥ 1");
            const std::int64_t end = steps > 0 ? t.steps_done() + steps : t.steps_total();
            std::vector<double> losses;
            while (t.steps_done() < end && !t.stopped()) {
              StepStats s;
              {
                py::gil_scoped_release release;
                s = t.step();
              }
              losses.push_back(s.loss);
              if (!callback.is_none() && t.steps_done() % every == 0) {
                py::object r = callback(py::cast(&t, py::return_value_policy::reference), stats_dict(s));
                if (!r.is_none() && !py::bool_(r)) break;
              }
            }
            return losses;
          },
          py::arg("steps") = 0, py::arg("callback") = py::none(), py::arg("every") = 1,
          "Steps until `steps` more are done (0: the config's budget) or early stopping ends the run; "
          "callback(trainer, stats) after every `every`-th step (returning False stops). Returns the losses.")
      .def_property_readonly("steps_done", &Trainer::steps_done)
      .def_property_readonly("steps_total", &Trainer::steps_total)
      .def_property_readonly("skipped", &Trainer::skipped)
      .def_property_readonly("figures",
                             [](const Trainer& t) {
                               py::dict d;
                               for (const auto& [name, value] : t.figures()) d[py::str(name)] = value;
                               return d;
                             },
                             "What the run's rules keep, by name (TrainingRule::figures): \"best\", \"best_step\", "
                             "\"curriculum_level\", \"outlier_skips\", …")
      .def("take_messages", &Trainer::take_messages,
           "The lines the run's rules said since the last call (a skipped update, a curriculum level, a stop)")
      .def_property_readonly("skipped_updates", &Trainer::skipped_updates)
      .def_property_readonly("threads", &Trainer::threads)
      .def_property_readonly("stopped", &Trainer::stopped)
      .def_property_readonly("config", [](const Trainer& t) { return t.config(); })
      .def_property_readonly("model_name", [](Trainer& t) { return t.model().name(); })
      .def_property_readonly("params", [](py::object self) { return params_of(self.cast<Trainer&>().model(), self); },
                             "The model's ParameterStore; keeps the trainer alive")
      .def_property_readonly("step_flops", &Trainer::step_flops)
      .def(
          "evaluate",
          [](Trainer& t, const std::string& split) {
            if (!t.split_task()) throw Error("evaluate: task " + std::string(t.task().name()) + " has no data parts");
            SplitResult r;
            {
              py::gil_scoped_release release;
              r = t.evaluate(split_of(split));
            }
            py::dict d;
            d["loss"] = r.loss;
            d["error"] = r.error;
            d["count"] = r.count;
            return d;
          },
          py::arg("split") = "validation", "Loss and error per example over a whole part of a data task.")
      .def("save", &Trainer::save, py::arg("dir"), "Writes DIR/checkpoint.safetensors.")
      .def_static(
          "resume",
          [](const std::string& dir, std::int64_t steps, std::int64_t threads, const std::vector<std::string>& sets) {
            return Trainer::resume(dir, steps, threads, nullptr, sets);
          },
          py::arg("dir"), py::arg("steps") = 0, py::arg("threads") = 0, py::arg("sets") = std::vector<std::string>{})
      .def("checkpoint", &checkpoint_dict,
           "Everything save() writes, as a dict: param/… and optim/… arrays, meta/… strings.")
      .def_static("from_checkpoint", &trainer_from_dict, py::arg("checkpoint"), py::arg("steps") = 0,
                  py::arg("threads") = 0, py::arg("sets") = std::vector<std::string>{},
                  "A trainer restored from checkpoint()'s dict; continues the run bit for bit.");
}

}  // namespace matmem::python
