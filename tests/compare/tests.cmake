# tests/compare: everything as `compare`; the thread-pool cases again as `compare_threads` for the
# ThreadSanitizer run (label tsan).
add_test(NAME compare COMMAND test_compare)
add_test(NAME compare_threads COMMAND test_compare "-tc=*--jobs*,*progress*")
set_tests_properties(compare_threads PROPERTIES LABELS "tsan")
