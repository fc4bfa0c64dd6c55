# tests/runtime: one executable (test_runtime) for the cpu_* and threads_* suites. The threads suites
# and the trace streams (threads, not fibers, in sanitizer builds) also run on their own under the
# label "tsan" so CI runs them under ThreadSanitizer.
add_test(NAME runtime COMMAND test_runtime)
add_test(NAME runtime_threads COMMAND test_runtime -ts=threads*)
set_tests_properties(runtime_threads PROPERTIES LABELS "tsan")
add_test(NAME runtime_trace_streams COMMAND test_runtime -ts=trace_streams)
set_tests_properties(runtime_trace_streams PROPERTIES LABELS "tsan")
