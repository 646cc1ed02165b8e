#pragma once
// A backend whose forward calls fail, as a device fault would, from the (after + 1)-th on: what the
// tests use to drive the engine's failure path (engine.h, Engine::failure) through a real server.
// The CPU reference cannot fault on its own; `verbatim serve` wraps its backend in one when the
// environment sets VERBATIM_FAULT_AFTER_FORWARDS (backend_factory.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "engine/backend.h"

namespace verbatim {

class FaultBackend : public Backend {
 public:
  FaultBackend(std::unique_ptr<Backend> inner, int64_t after) : inner_(std::move(inner)), after_(after) {}
  void allocate_kv(int num_blocks, int block_size) override { inner_->allocate_kv(num_blocks, block_size); }
  size_t kv_block_bytes(int block_size) const override { return inner_->kv_block_bytes(block_size); }
  void forward_logits(const ForwardBatch& batch, float* logits) override {
    count();
    inner_->forward_logits(batch, logits);
  }
  void forward_sample(const ForwardBatch& batch, const std::vector<SampleSpec>& specs,
                      std::vector<SampleResult>& out) override {
    count();
    inner_->forward_sample(batch, specs, out);
  }
  const ModelConfig& config() const override { return inner_->config(); }
  DType dtype() const override { return inner_->dtype(); }
  std::string device_name() const override { return inner_->device_name(); }
  std::string kernel_config() const override { return inner_->kernel_config(); }
  size_t kv_budget_bytes() const override { return inner_->kv_budget_bytes(); }

 private:
  void count() {
    // Sticky, like a CUDA context after an illegal address: every call from then on fails.
    if (calls_++ >= after_)
      throw Error("injected device fault (forward call " + std::to_string(calls_) + ", after " +
                  std::to_string(after_) + " good ones)");
  }
  std::unique_ptr<Backend> inner_;
  int64_t after_;
  int64_t calls_ = 0;
};

}  // namespace verbatim
