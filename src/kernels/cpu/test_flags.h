#pragma once
// Internal: the test-only switch behind cpu::testing::set_batch_dependent_matmul (ops.h).
#include <cstdint>

namespace verbatim::cpu {
bool batch_dependent_matmul_for_test();
// Whether an op with `work` (about flops) runs on several threads. Which thread computes a value
// never changes it, so this decides speed only.
bool parallel_worth_it(int64_t work);
}  // namespace verbatim::cpu
