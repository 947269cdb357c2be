// Slurm's compressed host lists ("node[01-04,07]", "a[1-2],b3", "rack[1-2]-n[01-02]"), as SLURM_JOB_NODELIST and
// SLURM_STEP_NODELIST hold them.
// Guarantees:
//  - A list is items separated by commas outside brackets; an item is literal text with any number of bracket
//    groups; a group is numbers or ranges LO-HI (LO <= HI) separated by commas. A range is zero-padded to the
//    width of LO when LO has leading zeros (Slurm's rule: "n[08-10]" -> n08 n09 n10, "n[8-10]" -> n8 n9 n10).
//    Several groups in one item give every combination, the first group varying slowest (as scontrol show
//    hostnames prints them).
//  - first_host() names the first host without expanding the list (so "n[0-999999999]" costs nothing);
//    expand_hosts() expands it and refuses lists of more than max_hosts hosts.
//  - Anything else (empty list or item, unbalanced or nested brackets, an empty group, a non-number, a
//    reversed range, numbers over 10^9) is a ddpx::Error naming `variable`, the list and what is wrong.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx {

std::string first_host(std::string_view list, std::string_view variable);
std::vector<std::string> expand_hosts(std::string_view list, std::string_view variable, size_t max_hosts = 65536);

}  // namespace ddpx
