# tests/analysis/run: unit tests of the run pieces (test_analysis_run), and `spsim run` / `spsim calibrate` launched
# under mpirun (checked by tools/expect_run.sh: exit status, time bound, output patterns).
add_test(NAME analysis_run COMMAND test_analysis_run)

if(spsim_have_mpi)
  # As tests/mpi: run as root in CI containers, 3-4 ranks on 2 cores, no CMA single-copy.
  set(spsim_run_env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_btl_vader_single_copy_mechanism=none)
  set(spsim_run_mpirun ${MPIEXEC_EXECUTABLE} --oversubscribe ${MPIEXEC_NUMPROC_FLAG})
  set(spsim_run_expect bash ${CMAKE_CURRENT_LIST_DIR}/tools/expect_run.sh)
  set(spsim_run_checks ${CMAKE_CURRENT_SOURCE_DIR}/configs/checks)
  set(spsim_run_tmp ${CMAKE_CURRENT_BINARY_DIR}/test-tmp/run)
  file(MAKE_DIRECTORY ${spsim_run_tmp})

  function(spsim_run_test name)
    cmake_parse_arguments(T "" "STATUS;SECONDS;PATTERN;ONCE" "ARGS;ENV;FIXTURES_SETUP;FIXTURES_REQUIRED" ${ARGN})
    if(NOT T_ONCE)
      set(T_ONCE -)
    endif()
    add_test(NAME ${name} COMMAND ${spsim_run_expect} ${T_STATUS} ${T_SECONDS} "${T_PATTERN}" "${T_ONCE}" --
                                  ${T_ARGS})
    set_tests_properties(${name} PROPERTIES LABELS "mpi;nosan" TIMEOUT 120 ENVIRONMENT "${spsim_run_env};${T_ENV}")
    if(T_FIXTURES_SETUP)
      set_tests_properties(${name} PROPERTIES FIXTURES_SETUP ${T_FIXTURES_SETUP})
    endif()
    if(T_FIXTURES_REQUIRED)
      set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ${T_FIXTURES_REQUIRED})
    endif()
  endfunction()

  # Every RSA variant at P = 2 and 4 (oversubscribed), verified: the exact ones pass, ColossalAI's
  # ÷P fails with the same diagnosis as `spsim check` (1/P on the Q/K/V-side gradients).
  foreach(np 2 4)
    foreach(variant allreduce-slice reduce-scatter ring)
      spsim_run_test(run_np${np}_rsa_${variant} STATUS 0 SECONDS 90 PATTERN "PASS: all 18 tensors match"
                     ARGS ${spsim_run_mpirun} ${np} $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-${variant}.json
                          --verify --iters 1 --warmup 0 --timeout 80)
    endforeach()
  endforeach()
  # Documents with a window and the needed-K/V exchange: point-to-point sends and receives of
  # mask-dependent sizes, over MPI.
  spsim_run_test(run_np4_allgather_kv_needed_documents STATUS 0 SECONDS 90 PATTERN "PASS: all 18 tensors match"
                 ARGS ${spsim_run_mpirun} 4 $<TARGET_FILE:spsim> run
                      ${spsim_run_checks}/allgather-kv-needed-documents.json --verify --iters 1 --warmup 0
                      --timeout 80)
  spsim_run_test(run_np2_rsa_colossalai STATUS 1 SECONDS 90
                 PATTERN "dWq is 0\\.5000 × reference \\(= 1/2 = 1/world_size\\)"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-colossalai.json
                      --verify --iters 1 --warmup 0 --timeout 80)
  spsim_run_test(run_np4_rsa_colossalai STATUS 1 SECONDS 90
                 PATTERN "dWq is 0\\.2500 × reference \\(= 1/4 = 1/world_size\\)"
                 ARGS ${spsim_run_mpirun} 4 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-colossalai.json
                      --verify --iters 1 --warmup 0 --timeout 80)

  # megatron_sp under MPI: tp 2 x cp 2 (zigzag ring), verified; the ÷tp variant names 1/tp as check does.
  spsim_run_test(run_np4_megatron_sp_zigzag STATUS 0 SECONDS 90 PATTERN "PASS: all 18 tensors match"
                 ARGS ${spsim_run_mpirun} 4 $<TARGET_FILE:spsim> run ${spsim_run_checks}/megatron-sp-ring-zigzag.json
                      --verify --iters 1 --warmup 0 --timeout 80)
  spsim_run_test(run_np2_megatron_tp_div STATUS 1 SECONDS 90
                 PATTERN "dLN2.gamma is 0\\.5000 × reference \\(= 1/2 = 1/tp\\)"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/megatron-tp-div.json
                      --verify --iters 1 --warmup 0 --timeout 80)

  # Dropout (hidden and attention) runs for real under MPI; --verify refuses it: no layout reproduces the
  # reference's masks.
  spsim_run_test(run_np2_megatron_sp_dropout STATUS 0 SECONDS 90 PATTERN "forward"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run
                      ${CMAKE_CURRENT_LIST_DIR}/data/megatron-sp-dropout.json --iters 2 --warmup 0 --timeout 80)
  spsim_run_test(run_dropout_verify STATUS 2 SECONDS 60
                 PATTERN "model.attention_dropout: run --verify compares gradients with dropout off"
                 ONCE "spsim: error: model.attention_dropout"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run
                      ${CMAKE_CURRENT_LIST_DIR}/data/megatron-sp-dropout.json --verify --iters 1 --warmup 0)

  # --sync-collectives: the same verified result, and the barrier waits reported as their own row.
  spsim_run_test(run_np2_sync_collectives STATUS 0 SECONDS 90 PATTERN "  peer_wait .* 0 B"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-reduce-scatter.json
                      --verify --iters 1 --warmup 0 --sync-collectives --timeout 80)

  # Bad input: every rank rejects the config, exit status 2, the message printed once.
  spsim_run_test(run_bad_config STATUS 2 SECONDS 60
                 PATTERN "strategy.options.grad_reduction.*allreduce_divide"
                 ONCE "spsim: error: strategy.options.grad_reduction"
                 ARGS ${spsim_run_mpirun} 3 $<TARGET_FILE:spsim> run
                      ${CMAKE_CURRENT_LIST_DIR}/data/bad-grad-reduction.json --verify)
  spsim_run_test(run_bad_iters STATUS 2 SECONDS 60 PATTERN "--iters: must be >= 1" ONCE "spsim: error: --iters"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-ring.json --iters 0)
  # A usage error caught by the command-line parser, before MPI starts: also reported by rank 0 only.
  spsim_run_test(run_bad_option STATUS 2 SECONDS 60 PATTERN "--itres" ONCE "--itres"
                 ARGS ${spsim_run_mpirun} 3 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-ring.json --itres 2)

  # A rank killed mid-run (a hidden hook: SIGKILL at the first timed iteration): the others, waiting for
  # it in a collective, are ended by mpirun within the bound, which names the rank and the signal.
  spsim_run_test(run_killed_rank STATUS nonzero SECONDS 30 PATTERN "rank 1.*signal 9"
                 ENV SPSIM_TEST_KILL_RANK=1
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-ring.json
                      --iters 3 --warmup 1)

  # --timeout bounds the whole run: a run of many seconds stopped after 2 s on every rank (exit 124, as
  # timeout(1)), with the watchdog's message.
  spsim_run_test(run_timeout STATUS 124 SECONDS 30 PATTERN "spsim: rank [01]: timeout after 2 s"
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run
                      ${CMAKE_CURRENT_SOURCE_DIR}/configs/runs/rsa-cpu-reduce-scatter-8192.json --iters 100 --timeout 2)

  # A short calibration, and a run predicted on the cluster it wrote.
  spsim_run_test(run_calibrate_quick STATUS 0 SECONDS 90 PATTERN "wrote .*cpu-np2\\.json"
                 FIXTURES_SETUP spsim_cpu_cluster
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> calibrate --backend mpi --quick --reps 2 --window 0
                      --out ${spsim_run_tmp}/cpu-np2.json)
  spsim_run_test(run_np2_predicted STATUS 0 SECONDS 90 PATTERN "measured \\(median\\) vs predicted on custom \\(cpu-"
                 FIXTURES_REQUIRED spsim_cpu_cluster
                 ARGS ${spsim_run_mpirun} 2 $<TARGET_FILE:spsim> run ${spsim_run_checks}/rsa-reduce-scatter.json
                      --iters 2 --warmup 1 --cluster ${spsim_run_tmp}/cpu-np2.json --timeout 80)
endif()
