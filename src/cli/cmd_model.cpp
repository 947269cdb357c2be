// `ddpx model`: the tensor table of a model (its family's reference names, shapes, offsets in the backward-ordered
// flat buffer) and the parameter count; `--list` prints the registry's families and names; `--init W` writes the
// weights `ddpx train --seed S` starts from (the family's initialization), so another framework can start there too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "core/byte_size.hpp"
#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"

namespace ddpx::cli {

Command add_model_command(CLI::App* cmd) {
  struct Flags {
    std::string spec = "vit_l_32";
    bool brief = false, list = false;
    std::string init;
    uint64_t seed = 0;
  };
  const auto f = command_flags<Flags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("--model", f->spec,
                  model_names_help() + "; any name can take overrides (vit_l_32:classes=10, mlp_s:width=512)")
      ->capture_default_str();
  cmd->add_flag("--brief", f->brief, "only the summary line");
  cmd->add_flag("--list", f->list, "list the model families and their names (the registry), then exit");
  cmd->add_option("--init", f->init,
                  "also write the initial weights `ddpx train --seed S` starts from to this .safetensors (reference "
                  "names; bench/recipe_torch_compare.py starts PyTorch there)");
  cmd->add_option("--seed", f->seed, "the seed of --init")->capture_default_str();
  return {cmd, [f] {
            if (f->list) {
              for (const ModelFamily& family : model_families())
                fmt::print("{}: {}\n  names: {}\n  custom: {}\n", family.name, family.summary,
                           fmt::join(family.variants, ", "), family.custom_syntax);
              return 0;
            }
            const std::unique_ptr<Model> model = make_model(f->spec);
            const FlatLayout& layout = model->layout();
            if (!f->init.empty()) {
              std::vector<float> params(layout.buffer_size(), 0.f);
              model->init_params(params.data(), f->seed);
              save_params_safetensors(f->init, layout, params.data(),
                                      {{"ddpx.model", layout.spec()}, {"ddpx.init_seed", std::to_string(f->seed)}},
                                      "--init");
            }
            if (!f->brief) {
              fmt::print("{:<58} {:>18} {:>12} {:>12}\n", "tensor (backward order)", "shape", "offset", "numel");
              for (const auto& t : layout.tensors())
                fmt::print("{:<58} {:>18} {:>12} {:>12}\n", t.name, fmt::format("[{}]", fmt::join(t.shape, ", ")),
                           t.offset, t.numel);
            }
            fmt::print("{}: {}\nparameters: {} ({}); flat buffer {} elements ({} in fp32), {} tensors\n",
                       layout.spec(), model->summary(), layout.num_params(),
                       si_prefixed(static_cast<double>(layout.num_params()), ""), layout.buffer_size(),
                       byte_size(static_cast<double>(layout.buffer_size()) * 4), layout.tensors().size());
            const double flops = model->forward_flops_per_image();
            fmt::print("FLOPs per image: forward {:.4g} G (matrix products, 2 per multiply-add), training step about "
                       "{:.4g} G (MFU = images/s x that / the GPU's peak)\n",
                       flops / 1e9, 3 * flops / 1e9);
            return 0;
          }};
}

}  // namespace ddpx::cli
