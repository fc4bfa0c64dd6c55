# The strategies run on the threads backend: also run them under ThreadSanitizer in CI.
add_test(NAME strategies COMMAND test_strategies)
set_tests_properties(strategies PROPERTIES LABELS "tsan")
