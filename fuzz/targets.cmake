# The fuzz targets and the library each one exercises (shared by fuzz/CMakeLists.txt, which builds
# them with libFuzzer, and fuzz/replay.cmake, which replays their corpora as ordinary ctests).
# fuzz_protocol compiles src/server/protocol.cpp itself instead of linking vb_server: the server
# library pulls in the CPU kernels, whose per-ISA files use GCC-only `#pragma GCC target`.
set(VERBATIM_FUZZ_TARGETS
  fuzz_safetensors:vb_model
  fuzz_model_dir:vb_model
  fuzz_checkpoint_index:vb_model
  fuzz_tokenizer_encode:vb_tokenizer
  fuzz_tokenizer_decode:vb_tokenizer
  fuzz_chat_template:vb_tokenizer
  fuzz_protocol:vb_tokenizer
  fuzz_generation_config:vb_tokenizer
)
set(VERBATIM_FUZZ_EXTRA_SOURCES_fuzz_protocol ${CMAKE_SOURCE_DIR}/src/server/protocol.cpp)
set(VERBATIM_FUZZ_EXTRA_SOURCES_fuzz_generation_config ${CMAKE_SOURCE_DIR}/src/server/protocol.cpp)
