#pragma once
// Internal: the test-only switch behind cpu::testing::set_batch_dependent_matmul (ops.h).
namespace verbatim::cpu {
bool batch_dependent_matmul_for_test();
}  // namespace verbatim::cpu
