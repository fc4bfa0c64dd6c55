# tests/analysis/closed_form: everything as `analysis_closed_form`; the sweep over the real simulator with
# several worker threads again as `analysis_closed_form_threads` for the ThreadSanitizer run (label tsan).
add_test(NAME analysis_closed_form COMMAND test_analysis_closed_form)
add_test(NAME analysis_closed_form_threads COMMAND test_analysis_closed_form "-tc=*--jobs*")
set_tests_properties(analysis_closed_form_threads PROPERTIES LABELS "tsan")
