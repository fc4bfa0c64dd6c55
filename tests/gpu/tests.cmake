# test_gpu exits 77 when there is no GPU or no CUDA build: ctest reports it as skipped, not passed.
# nosan: the CUDA runtime and ASan's shadow memory do not mix.
add_test(NAME gpu COMMAND test_gpu)
set_tests_properties(gpu PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;nosan")
if(spsim_have_cuda)
  target_link_libraries(test_gpu PRIVATE spsim_cuda)  # the binary loads it as a module; the test links it
endif()
