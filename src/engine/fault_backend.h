#pragma once
// A backend whose forward calls fail, as a device fault would, from the (after + 1)-th on (or
// never return, as a hung kernel): what the tests use to drive the engine's failure path
// (engine.h, Engine::failure) and the server's step watchdog through a real server. The CPU
// reference cannot fault or hang on its own; `verbatim serve` wraps its backend in one when the
// environment sets VERBATIM_FAULT_AFTER_FORWARDS or VERBATIM_HANG_AFTER_FORWARDS (backend_factory.cpp).
// Kind::Device runs a given action once instead (on a GPU: a kernel that really faults or never
// returns, VERBATIM_DEVICE_*_AFTER_FORWARDS) and lets the call go on, to meet the real failure.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "engine/backend.h"

namespace verbatim {

class FaultBackend : public Backend {
 public:
  enum class Kind { Throw, Hang, Device };
  // After `after` good forward calls; or, with a trigger file, from the first call made once that
  // file exists (a test arms the fault when it is ready, whatever the machine's speed).
  FaultBackend(std::unique_ptr<Backend> inner, int64_t after, Kind kind = Kind::Throw, std::string trigger_file = "",
               std::function<void()> device_action = {})
      : inner_(std::move(inner)),
        after_(after),
        kind_(kind),
        trigger_(std::move(trigger_file)),
        device_action_(std::move(device_action)) {}
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
    ++calls_;
    if (good_ < 0 && (trigger_.empty() ? calls_ <= after_ : !std::filesystem::exists(trigger_))) return;
    if (kind_ == Kind::Device) {  // once: from then on the device itself is what fails
      if (good_ >= 0) return;
      good_ = calls_ - 1;
      if (device_action_) device_action_();
      return;
    }
    if (good_ < 0) good_ = calls_ - 1;  // sticky from here on
    // Hung: the calling thread sleeps until the process ends, like one waiting on a kernel that
    // never finishes.
    while (kind_ == Kind::Hang) std::this_thread::sleep_for(std::chrono::hours(1));
    // Sticky, like a CUDA context after an illegal address: every call from then on fails.
    throw Error("injected device fault (forward call " + std::to_string(calls_) + ", after " +
                std::to_string(good_) + " good ones)");
  }
  std::unique_ptr<Backend> inner_;
  int64_t after_;
  Kind kind_;
  std::string trigger_;
  std::function<void()> device_action_;
  int64_t calls_ = 0;
  int64_t good_ = -1;  // calls before the first failing one; -1: none failed yet
};

}  // namespace verbatim
