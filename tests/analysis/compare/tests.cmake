# tests/analysis/compare: everything as `analysis_compare`; the thread-pool cases again as
# `analysis_compare_threads` for the ThreadSanitizer run (label tsan).
add_test(NAME analysis_compare COMMAND test_analysis_compare)
add_test(NAME analysis_compare_threads COMMAND test_analysis_compare "-tc=*--jobs*,*progress*")
set_tests_properties(analysis_compare_threads PROPERTIES LABELS "tsan")
