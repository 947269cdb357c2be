// `ddpx model`: the tensor table of a ViT shape (torchvision names, shapes, offsets in the backward-ordered flat
// buffer) and the parameter count.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "cli/commands.hpp"
#include "model/param_layout.hpp"

namespace ddpx::cli {

Command add_model_command(CLI::App& app) {
  auto spec = std::make_shared<std::string>("vit_l_32");
  auto brief = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("model", "Print a ViT's tensors (torchvision names and shapes) and its size");
  cmd->add_option("--model", *spec,
                  "vit_b_16, vit_b_32, vit_l_16, vit_l_32, vit_h_14, vit_tiny_test, vit_small_test, a name with "
                  "overrides (vit_l_32:classes=10) or custom:image=..,patch=..,layers=..,hidden=..,heads=..,"
                  "mlp=..,classes=..")
      ->capture_default_str();
  cmd->add_flag("--brief", *brief, "only the summary line");
  return {cmd, [spec, brief] {
            ParamLayout layout(parse_model_spec(*spec));
            const VitConfig& c = layout.config();
            if (!*brief) {
              fmt::print("{:<58} {:>18} {:>12} {:>12}\n", "tensor (backward order)", "shape", "offset", "numel");
              for (const auto& t : layout.tensors())
                fmt::print("{:<58} {:>18} {:>12} {:>12}\n", t.name, fmt::format("[{}]", fmt::join(t.shape, ", ")),
                           t.offset, t.numel);
            }
            fmt::print(
                "{}: image {} patch {} ({} tokens), {} layers, hidden {}, {} heads, mlp {}, {} classes\n"
                "parameters: {} ({:.1f} M); flat buffer {} elements ({:.1f} MB in fp32), {} tensors\n",
                c.spec(), c.image_size, c.patch_size, c.seq_len(), c.num_layers, c.hidden_dim, c.num_heads,
                c.mlp_dim, c.num_classes, layout.num_params(), layout.num_params() / 1e6, layout.buffer_size(),
                layout.buffer_size() * 4 / 1e6, layout.tensors().size());
            return 0;
          }};
}

}  // namespace ddpx::cli
