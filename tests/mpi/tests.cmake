# MPI tests (included by the top-level CMakeLists in place of the default add_test): test_mpi under
# mpirun for 1 to 4 ranks, and fault-injection runs checked by tools/expect_exit.sh. Nothing without MPI.
if(spsim_have_mpi)
  # OpenMPI refuses to run as root (CI containers) unless told twice; --oversubscribe lets 3-4 ranks
  # share 2 cores. vader's single-copy mechanism (CMA) needs ptrace rights that containers often
  # withhold; 'none' makes shared-memory transfers copy twice but work everywhere.
  set(spsim_mpi_test_env
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_btl_vader_single_copy_mechanism=none)
  set(spsim_mpirun ${MPIEXEC_EXECUTABLE} --oversubscribe ${MPIEXEC_NUMPROC_FLAG})

  foreach(np 1 2 3 4)
    add_test(NAME mpi_np${np} COMMAND ${spsim_mpirun} ${np} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:test_mpi>
                                     ${MPIEXEC_POSTFLAGS})
    set_tests_properties(mpi_np${np} PROPERTIES LABELS "mpi;nosan" TIMEOUT 180
                         ENVIRONMENT "${spsim_mpi_test_env}")
  endforeach()

  add_executable(mpi_fault ${CMAKE_CURRENT_LIST_DIR}/tools/mpi_fault.cpp)
  target_link_libraries(mpi_fault PRIVATE spsim_runtime)
  target_compile_options(mpi_fault PRIVATE ${SPSIM_WARNINGS})
  add_dependencies(test_mpi mpi_fault)

  # mode, expected exit, bound in seconds, stderr pattern or '-' (the last rank of 3 is rank 2)
  set(spsim_mpi_faults
      "ok|zero|30|-"
      "throw|nonzero|30|spsim: rank 2: injected failure"
      "kill|nonzero|30|rank 2.*signal 9"
      "timeout|nonzero|30|spsim: rank [0-2]: timeout after 1 s")
  foreach(fault ${spsim_mpi_faults})
    string(REPLACE "|" ";" fields "${fault}")
    list(GET fields 0 mode)
    list(GET fields 1 want)
    list(GET fields 2 bound)
    list(GET fields 3 pattern)
    add_test(NAME mpi_fault_${mode}
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tools/expect_exit.sh ${want} ${bound} "${pattern}" --
                     ${spsim_mpirun} 3 ${MPIEXEC_PREFLAGS} $<TARGET_FILE:mpi_fault> ${mode})
    set_tests_properties(mpi_fault_${mode} PROPERTIES LABELS "mpi;nosan" TIMEOUT 60
                         ENVIRONMENT "${spsim_mpi_test_env}")
  endforeach()
endif()
