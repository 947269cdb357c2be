// ddpx command-line entry point: parses the subcommand and its flags (CLI11), runs it, and turns every
// ddpx::Error into "ddpx: error: <message>" with exit status 2, and every internal error (DDPX_INTERNAL_ASSERT, or
// an exception no ddpx code raises on purpose) into "ddpx: internal error ..." with status 4 (core/exit_status.hpp).
// Subcommands live one per file (cmd_*.cpp).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <exception>

#include "cli/commands.hpp"
#include "cli/launch.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/exit_status.hpp"
#include "core/internal_assert.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "ddpx: data-parallel ViT training in C++/CUDA, with the communication analysis built in.\n"
      "One process per GPU, gradients all-reduced in buckets that overlap the backward pass, compression hooks,\n"
      "and a per-step breakdown that says where the time goes and what to change."};
  app.require_subcommand(1);
  // "ddpx 0.1 (commit e933e79)": the same version and commit every run report records.
  app.set_version_flag("--version",
                       "ddpx " + ddpx::ddpx_version() + " (commit " + ddpx::ddpx_commit() + ")",
                       "print the version and the git commit this binary was built from, then exit");
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
      "  ddpx bench --precisions fp32,bf16 --hooks allreduce,bf16 --gpus 1,2   the seed's table in one command\n"
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? ddpx::exit_status::success : ddpx::exit_status::user_error;
  }
  try {
    return commands.run(app);
  } catch (const ddpx::Error& e) {
    fmt::print(stderr, "ddpx: error: {}\n", e.what());
    return ddpx::exit_status::user_error;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "ddpx: error: out of memory: the model, --batch or the data do not fit in this machine's "
                       "memory; lower --batch or use a smaller model\n");
    return ddpx::exit_status::user_error;
  } catch (const ddpx::InternalError& e) {
    fmt::print(stderr, "ddpx: {}\n", e.what());  // "internal error at FILE:LINE ...: please report it ..."
    return ddpx::exit_status::internal_error;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ddpx: internal error: {}. This is a bug in ddpx: please report it with the command line "
                       "and this message\n", e.what());
    return ddpx::exit_status::internal_error;
  }
}
