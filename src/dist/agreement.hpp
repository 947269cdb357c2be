// Start-up agreement: every rank checks that all ranks run with the same settings before the first step (rank 0's
// initial parameters then become everyone's through broadcast_host, dist/host_collectives.hpp: see
// train/dist_setup.cpp's broadcast_initial_parameters).
// Guarantees of require_agreement(comm, settings):
//  - Collective: every rank calls it with a table of (setting, value) pairs built by the same code (same names,
//    same order). The common case costs ONE all-gather of a 16-byte digest of the whole table (FNV-1a hash +
//    number of entries), however many settings it holds. Only on a mismatch: one all-gather of a digest per
//    setting, then one of the first differing setting's value.
//  - On mismatch EVERY rank throws the same ddpx::Error, "ranks disagree on --lr: rank 0 has '0.01', rank 2
//    has '0.1'" (the first setting in table order that differs, and the first rank that differs from rank 0 on
//    it; values longer than 200 bytes are truncated with "..."), followed by " (ranks differing from rank 0:
//    2, 3)" when several do and "; they also disagree on --steps, --seed" for the next differing settings (up to
//    3 named). So no rank goes on to hang in a collective the others never enter. Tables of different lengths
//    (ranks running different ddpx builds) are refused naming both lengths. The group stays usable afterwards.
//  - The one-setting form is a table of one.
// It does not bound its own wait: the caller runs it under the watchdog (see dist/watchdog.hpp, run_watched).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "dist/communicator.hpp"

namespace ddpx {

struct AgreedSetting {
  std::string name;   // the flag, as the user knows it: "--lr"
  std::string value;  // its value on this rank, as the user would write it
};

void require_agreement(Communicator& comm, const std::vector<AgreedSetting>& settings);
void require_agreement(Communicator& comm, std::string_view what, const std::string& value);

}  // namespace ddpx
