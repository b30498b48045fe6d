// Plugins (models/plugin.hpp) through the `matmem` command: `--plugin PATH` and MATMEM_PLUGINS load a
// plugin's model, config key and op for every subcommand; a run records its plugins and a resume or eval
// without them is refused naming them; a plugin that is missing, not loadable, unexported, of another
// version or instruction set, or registering a taken name is refused naming it and the reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "matmem/runtime/isa.hpp"
#include "matmem/runtime/safetensors.hpp"
#include "matmem/tests/tools/command.hpp"

using namespace matmem::testing;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kGood = TEST_PLUGIN_GOOD;

// `matmem --plugin GOOD ARGS`.
std::string with_good(const std::string& args) { return "--plugin '" + kGood + "' " + args; }

// A plugin model small enough for a step to take well under a millisecond.
const std::string kTrain = "train --model test_plugin_rnn --task copy --set test_plugin.size=5 --set task.rows=2 "
                           "--set task.cols=3 --set task.max_length=3 --set batch=2 --set log_every=5 "
                           "--set checkpoint_every=10 --set lr=3e-3 --json";

nlohmann::json config_of(const fs::path& run) { return nlohmann::json::parse(read_file(run / "config.json")); }

// Data rows of a run's metrics.csv.
int metric_rows(const fs::path& run) { return count_of(read_file(run / "metrics.csv"), "\n") - 1; }
}  // namespace

TEST_CASE("plugins: a plugin model trains with its own config key, and the run records the plugin",
          "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_train");
  const CommandResult r = run_matmem(with_good(kTrain + " --steps 20 --out run"), dir);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(metric_rows(dir / "run") == 4);
  const nlohmann::json c = config_of(dir / "run");
  CHECK(c["model"] == "test_plugin_rnn");
  CHECK(c["test_plugin.size"] == 5);
  CHECK(c["plugins"] == fs::canonical(kGood).string());
  // The checkpoint's metadata holds the same config.
  const matmem::TensorFile f = matmem::read_safetensors((dir / "run/checkpoint.safetensors").string());
  CHECK(nlohmann::json::parse(f.metadata.at("config"))["plugins"] == fs::canonical(kGood).string());
  // The key sizes the model's state.
  const CommandResult six = run_matmem(with_good(kTrain + " --set test_plugin.size=6 --steps 1 --out six"), dir);
  REQUIRE(six.status == 0);
  CHECK(nlohmann::json::parse(r.output)["params"] != nlohmann::json::parse(six.output)["params"]);
}

TEST_CASE("plugins: train --help-config lists a plugin's config key only with the plugin", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_help_config");
  const CommandResult with = run_matmem(with_good("train --help-config"), dir);
  REQUIRE(with.status == 0);
  CHECK_THAT(with.output, Contains("test_plugin.size") && Contains("rows and columns of the state"));
  const CommandResult without = run_matmem("train --help-config", dir);
  REQUIRE(without.status == 0);
  CHECK_THAT(without.output, !Contains("test_plugin.size"));
}

TEST_CASE("plugins: gradcheck --op checks a plugin's op", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_gradcheck");
  const CommandResult r = run_matmem(with_good("gradcheck --op test_plugin_cube"), dir);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("test_plugin_cube") && Contains("0 failed"));
  const CommandResult without = run_matmem("gradcheck --op test_plugin_cube", dir);
  CHECK(without.refused());
}

TEST_CASE("plugins: MATMEM_PLUGINS loads the plugins it lists, empty entries ignored", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_environment");
  const CommandResult r =
      run_matmem("gradcheck --op test_plugin_cube", dir, 60, "", "MATMEM_PLUGINS='::" + kGood + ":'");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Contains("test_plugin_cube") && Contains("0 failed"));
}

TEST_CASE("plugins: the same plugin given twice, by --plugin, a symbolic link and MATMEM_PLUGINS, loads once",
          "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_twice");
  fs::create_symlink(kGood, dir / "link.so");
  const CommandResult r = run_matmem(with_good("--plugin link.so --plugin='" + kGood + "' gradcheck --op test_plugin_cube"),
                                     dir, 60, "", "MATMEM_PLUGINS='" + kGood + "'");
  INFO(r.output);
  CHECK(r.status == 0);
}

TEST_CASE("plugins: a resume or eval without the run's plugin is refused naming it; with it the run continues",
          "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_resume");
  REQUIRE(run_matmem(with_good(kTrain + " --steps 10 --out run"), dir).status == 0);
  const std::string plugin = fs::canonical(kGood).string();

  const CommandResult resume = run_matmem("train --resume run --steps 20", dir);
  CHECK(resume.refused());
  CHECK_THAT(resume.output, Contains("matmem: ") && Contains("plugin " + plugin + ", which is not loaded") &&
                                Contains("model test_plugin_rnn") && Contains("--plugin " + plugin) &&
                                Contains("MATMEM_PLUGINS=" + plugin));
  CHECK(metric_rows(dir / "run") == 2);

  const CommandResult eval = run_matmem("eval --checkpoint run --sizes 2", dir);
  CHECK(eval.refused());
  CHECK_THAT(eval.output, Contains("plugin " + plugin + ", which is not loaded"));

  const CommandResult resumed = run_matmem(with_good("train --resume run --steps 20 --json"), dir);
  INFO(resumed.output);
  REQUIRE(resumed.status == 0);
  CHECK(metric_rows(dir / "run") == 4);
  CHECK(run_matmem(with_good("eval --checkpoint run --sizes 2"), dir).status == 0);
}

TEST_CASE("plugins: sweep passes its plugins on to the runs it starts", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_sweep");
  std::ofstream(dir / "plan.json") << R"({"out": "o", "steps": 6, "seeds": [1, 2],
    "set": {"model": "test_plugin_rnn", "task": "copy", "test_plugin.size": 4, "task.rows": 2, "task.cols": 3,
            "task.max_length": 3, "batch": 2, "log_every": 3}})";
  const CommandResult r = run_matmem(with_good("sweep plan.json --jobs 2"), dir, 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  for (const char* seed : {"seed1", "seed2"}) {
    const fs::path run = dir / "o/run" / seed;
    CHECK(fs::exists(run / "checkpoint.safetensors"));
    CHECK(config_of(run)["plugins"] == fs::canonical(kGood).string());
  }
}

TEST_CASE("plugins: every rank of mpirun loads --plugin and a distributed run trains", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_mpi");
  const CommandResult r = run_matmem(with_good(kTrain + " --distributed --steps 10 --out run"), dir, 120, kMpirun2);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(metric_rows(dir / "run") == 2);
}

TEST_CASE("plugins: a missing file is refused naming it", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_missing");
  const CommandResult r = run_matmem("--plugin nowhere/libmine.so gradcheck --all", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("matmem: plugin nowhere/libmine.so: no such file"));
  const CommandResult env = run_matmem("gradcheck --all", dir, 60, "", "MATMEM_PLUGINS=nowhere/libmine.so");
  CHECK(env.refused());
  CHECK_THAT(env.output, Contains("matmem: MATMEM_PLUGINS: plugin nowhere/libmine.so: no such file"));
}

TEST_CASE("plugins: a file that is not a shared library is refused with the loader's reason", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_not_loadable");
  std::ofstream(dir / "text.so") << "not a library\n";
  const CommandResult r = run_matmem("--plugin text.so gradcheck --all", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("matmem: plugin text.so: cannot be loaded: ") && Contains("text.so"));
}

TEST_CASE("plugins: a library without MATMEM_PLUGIN is refused saying how to export one", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_no_symbol");
  const CommandResult r = run_matmem("--plugin '" TEST_PLUGIN_NO_SYMBOL "' gradcheck --all", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("plugin " TEST_PLUGIN_NO_SYMBOL ": exports no matmem_plugin: define its "
                                "registration function with MATMEM_PLUGIN(fn)"));
}

TEST_CASE("plugins: a plugin registering a taken name is refused naming the plugin and the name", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_duplicate");
  const CommandResult r = run_matmem("--plugin '" TEST_PLUGIN_DUPLICATE "' train --help-config", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("plugin " TEST_PLUGIN_DUPLICATE ": a model named matntm is already registered"));
}

TEST_CASE("plugins: a plugin built against another matmem version is refused naming both", "[tools][plugin]") {
  const fs::path dir = fresh_dir("plugin_other_version");
  const CommandResult r = run_matmem("--plugin '" TEST_PLUGIN_OTHER_VERSION "' gradcheck --all", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("plugin " TEST_PLUGIN_OTHER_VERSION ": built against matmem 0.0.0, this is matmem " +
                                std::string(matmem::version())));
}

TEST_CASE("plugins: a plugin built for another instruction set is refused naming both", "[tools][plugin]") {
  if (std::string(matmem::library_isa()) == "x86-64") {
    WARN("SKIPPED: libmatmem is built for the baseline x86-64 (a portable build), as the other-ISA plugin is");
    return;
  }
  const fs::path dir = fresh_dir("plugin_other_isa");
  const CommandResult r = run_matmem("--plugin '" TEST_PLUGIN_OTHER_ISA "' gradcheck --all", dir);
  CHECK(r.refused());
  CHECK_THAT(r.output, Contains("plugin " TEST_PLUGIN_OTHER_ISA ": built for instruction set \"x86-64\", libmatmem for \"" +
                                std::string(matmem::library_isa()) + "\""));
}
