// Parsing the list-valued flags of `ddpx topo/allreduce/bench/tune`: "fp32,bf16", "1,2,4", "5,25,100" and byte
// sizes "1K", "256M", "1G" or ranges "1K:1G" (doubling, like nccl-tests' -b/-e/-f 2) and "1K:1G:4" (factor 4).
// Guarantees: every error names the flag and the offending item and says what is expected; a returned list is
// never empty; items keep the user's order with duplicates removed; sizes are powers of 1024 (K = 1024 bytes).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddpx::cli {

// "a,b,,c" -> {"a", "b", "c"} (spaces around items trimmed, empty items dropped).
std::vector<std::string> split_list(std::string_view text, std::string_view flag);
std::vector<double> parse_number_list(std::string_view text, std::string_view flag);   // every item > 0
std::vector<int> parse_count_list(std::string_view text, std::string_view flag);       // every item >= 1
// "4096", "4K", "16M", "1G" (binary units; a trailing "B" is accepted) -> bytes (> 0).
int64_t parse_byte_size(std::string_view text, std::string_view flag);
// "1K:1G[:F]" (F >= 2, default 2), or a comma list of sizes: the sizes in increasing order.
std::vector<int64_t> parse_size_sweep(std::string_view text, std::string_view flag);
// "" when `text` is a decimal whole number that fits int64 (uint64 when !allow_negative), else the reason, for
// CLI11 validators: CLI11 itself would clamp 99999999999999999999 to the largest value and wrap -1 into 2^64-1.
std::string whole_number_problem(const std::string& text, bool allow_negative);
// 1024 -> "1K", 1048576 -> "1M", 1000 -> "1000" (the largest binary unit that divides it exactly).
std::string format_byte_size(int64_t bytes);

}  // namespace ddpx::cli
