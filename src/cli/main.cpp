// ddpx command-line entry point: parses the subcommand and its flags (CLI11), runs it, and turns every
// ddpx::Error into "ddpx: error: <message>" with exit status 2, and every internal error (DDPX_INTERNAL_ASSERT, or
// an exception no ddpx code raises on purpose) into "ddpx: internal error ..." with status 4 (core/exit_status.hpp).
// Out of memory ends the process at once (std::_Exit, no exit handlers) with an advice that fits the command; an
// exception escaping a thread ends it the same way with a message (std::set_terminate): no exception leaves ddpx
// as a signal. Subcommands live one per file (cmd_*.cpp).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/cuda_devices.hpp"
#include "dist/backend_registry.hpp"
#include "cli/help_format.hpp"
#include "cli/launch.hpp"
#include "cli/suggest.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "core/internal_assert.hpp"

namespace {

// Ends the process now, without atexit handlers or static destructors: under an address-space limit a library's
// exit handler retried an allocation forever after ddpx had printed its out-of-memory error, so the run never
// ended. Everything ddpx writes is already flushed or renamed into place by then.
[[noreturn]] void exit_now(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

// The out-of-memory advice of the command that ran out (`ddpx report` on a huge report is not told to lower
// --batch).
std::string out_of_memory_advice(const std::string& command) {
  if (command == "train" || command == "bench" || command == "tune")
    return "the model, --batch or the data do not fit in this machine's memory; lower --batch or use a smaller "
           "model";
  if (command == "eval") return "the model, the images or --batch do not fit in this machine's memory; lower --batch "
                                "or evaluate fewer images at a time";
  if (command == "report" || command == "predict")
    return "the run report or trace is too large for this machine's memory; analyse it on a machine with more "
           "memory, or record fewer steps (--warmup, --steps) or fewer ranks";
  return "`ddpx " + command + "` needed more memory than this process may use";
}

// `ddpx train ...` with torchvision's flags -> the ddpx command line (`ddpx eval ...` for --test-only); any other
// command line as it is.
std::vector<std::string> translated_command_line(CLI::App& app, const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "train") return args;
  CLI::App* train = app.get_subcommand("train");
  const auto formatter = train->get_config_formatter();
  const auto read_config = [&](const std::string& file) {
    std::vector<ddpx::cli::ConfigEntry> entries;
    for (const CLI::ConfigItem& item : ddpx::cli::read_config_items(file, *formatter)) {
      if (item.name == "++" || item.name == "--") continue;  // section markers; read_config_for checks the rest
      entries.push_back({item.name, item.inputs});
    }
    return entries;
  };
  ddpx::cli::TorchvisionTranslation translation =
      ddpx::cli::translate_torchvision_args({args.begin() + 2, args.end()}, read_config);
  std::vector<std::string> result = args;
  if (translation.torchvision) {
    result = {args[0]};
    if (!translation.test_only) result.emplace_back("train");
    result.insert(result.end(), translation.args.begin(), translation.args.end());
  }
  ddpx::cli::remember_torchvision_translation(std::move(translation));
  return result;
}

std::string command_of(CLI::App& app) {
  const std::vector<CLI::App*> ran = app.get_subcommands();
  return ran.empty() ? std::string("ddpx") : ran.front()->get_name();
}

}  // namespace

int main(int argc, char** argv) {
  // An exception escaping a thread or a noexcept function would abort (status 134) without a word: say what it was
  // and end with ddpx's statuses instead (no exception leaves ddpx by a signal).
  std::set_terminate([] {
    try {
      if (std::exception_ptr current = std::current_exception()) std::rethrow_exception(current);
      std::fputs("ddpx: internal error: terminate called without an exception. This is a bug in ddpx: please "
                 "report it\n", stderr);
    } catch (const std::bad_alloc&) {
      std::fputs("ddpx: error: out of memory (in a background thread); this process needed more memory than it may "
                 "use\n", stderr);
      exit_now(ddpx::exit_status::user_error);
    } catch (const ddpx::Error& e) {
      std::fprintf(stderr, "ddpx: error: %s\n", e.what());
      exit_now(ddpx::exit_status::user_error);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ddpx: internal error: %s. This is a bug in ddpx: please report it\n", e.what());
    } catch (...) {
      std::fputs("ddpx: internal error: an unknown exception. This is a bug in ddpx: please report it\n", stderr);
    }
    exit_now(ddpx::exit_status::internal_error);
  });
  CLI::App app{
      "ddpx: data-parallel ViT training in C++/CUDA, with the communication analysis built in.\n"
      "One process per GPU, gradients all-reduced in buckets that overlap the backward pass, compression hooks,\n"
      "and a per-step breakdown that says where the time goes and what to change."};
  app.require_subcommand(1);
  // "ddpx 0.1 (commit e933e79)": the same version and commit every run report records; then the devices this
  // binary can train on here (scripts/run.sh picks --device from it, not from nvidia-smi).
  app.set_version_flag(
      "--version",
      [] {
        return "ddpx " + ddpx::ddpx_version() + " (commit " + ddpx::ddpx_commit() + ")\n" + ddpx::cli::devices_line() +
               "\n" + ddpx::built_backends_line();
      },
      "print the version, the git commit this binary was built from and the devices it can use here, then exit");
  app.footer(
      "Examples:\n"
      "  ddpx model --model vit_l_32                         tensor table and parameter count\n"
      "  ddpx model --list                                   the model families and names (vit, mlp)\n"
      "  ddpx train --device cpu --model mlp_s --data learnable --steps 100   the MLP classifier\n"
      "  ddpx train --device cpu --model vit_small_test --data learnable --steps 100\n"
      "  ddpx train --device cuda --model vit_l_32 --precision bf16 --steps 100\n"
      "  ddpx train --device cuda --nproc-per-node 2 --comm-hook bf16 --bucket-mb 25 --report r.json\n"
      "  ddpx eval --model vit_tiny_test --weights w.safetensors --images x.npy --labels y.npy\n"
      "  ddpx report run.json --trace run.trace.json         breakdown and verdict of a saved run\n"
      "  ddpx report --check-trace run.trace.json            every track of a trace well nested and in order\n"
      "  ddpx topo                                           GPU links and the NCCL transport per pair\n"
      "  ddpx allreduce --nproc-per-node 2 --sizes 1K:1G     nccl-tests-like bus bandwidth table\n"
      "  ddpx bench --precisions fp32,bf16 --hooks allreduce,bf16 --gpus 1,2   throughput table and chart\n"
      "  ddpx tune --out best.cfg -- --model vit_l_32 --device cuda   then: ddpx train --config best.cfg\n"
      "  ddpx predict run.json --link pcie-shm --ranks 2,4,8   scaling per hook and bucket cap, before renting GPUs\n"
      "Run 'ddpx <command> --help' for the flags of one command.\n"
      "Exit status: 0 success; 2 a bad flag, file or value, or a failed run (the message names it); 3 a\n"
      "collective timed out with nothing to unwind (--comm-timeout); 4 an internal error (a bug in ddpx: please\n"
      "report it); a launcher (--nproc-per-node, --nnodes) exits with its first failed rank's status.");
  // Flag errors look like every other ddpx error: "ddpx: error: --batch: 'abc' is not ...".
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "ddpx: error: " + std::string(e.what()) + "\nRun 'ddpx <command> --help' for the flags of a command.\n";
  });
  ddpx::cli::remember_command_line(argc, argv);
  ddpx::cli::CommandSet commands = ddpx::cli::register_commands(app);
  ddpx::cli::apply_help_format(app);  // 120-column help, plain type names, each command's own examples
  // torchvision's train.py command line becomes ddpx's before the parse (cli/torchvision_flags.hpp); the workers
  // of --nproc-per-node re-run the command line as typed and translate it the same way.
  std::vector<std::string> args(argv, argv + argc);
  try {
    args = translated_command_line(app, args);
  } catch (const ddpx::Error& e) {
    fmt::print(stderr, "ddpx: error: {}\n", e.what());
    return ddpx::exit_status::user_error;
  } catch (const CLI::ConfigError& e) {
    fmt::print(stderr, "ddpx: error: {}\n", e.what());
    return ddpx::exit_status::user_error;
  }
  std::vector<const char*> parsed_argv;
  for (const std::string& arg : args) parsed_argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(parsed_argv.size()), parsed_argv.data());
  } catch (const CLI::ParseError& e) {
    // A mistyped command or flag, or a unit after a number, named with its fix (cli/suggest.hpp).
    if (const auto message = ddpx::cli::explain_parse_error(app, {args.begin() + 1, args.end()}, e)) {
      fmt::print(stderr, "ddpx: error: {}\n", *message);
      return ddpx::exit_status::user_error;
    }
    return app.exit(e) == 0 ? ddpx::exit_status::success : ddpx::exit_status::user_error;
  } catch (const ddpx::Error& e) {  // a flag's own check may raise ddpx's error
    fmt::print(stderr, "ddpx: error: {}\n", e.what());
    return ddpx::exit_status::user_error;
  } catch (const std::bad_alloc&) {
    std::fputs("ddpx: error: out of memory while reading the command line\n", stderr);
    exit_now(ddpx::exit_status::user_error);
  }
  try {
    return commands.run(app);
  } catch (const ddpx::Error& e) {
    fmt::print(stderr, "ddpx: error: {}\n", e.what());
    return ddpx::exit_status::user_error;
  } catch (const std::bad_alloc&) {
    const std::string advice = out_of_memory_advice(command_of(app));
    std::fprintf(stderr, "ddpx: error: out of memory: %s\n", advice.c_str());  // fmt may need memory itself
    exit_now(ddpx::exit_status::user_error);
  } catch (const ddpx::InternalError& e) {
    fmt::print(stderr, "ddpx: {}\n", e.what());  // "internal error at FILE:LINE ...: please report it ..."
    return ddpx::exit_status::internal_error;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ddpx: internal error: {}. This is a bug in ddpx: please report it with the command line "
                       "and this message\n", e.what());
    return ddpx::exit_status::internal_error;
  } catch (...) {
    std::fputs("ddpx: internal error: an unknown exception. This is a bug in ddpx: please report it with the "
               "command line\n", stderr);
    return ddpx::exit_status::internal_error;
  }
}
