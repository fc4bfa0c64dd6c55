# CUDA device + NCCL communicator backend (target spsim_cuda); included by the top CMakeLists.
#
# Runs in the top-level scope (include(), not add_subdirectory()), so plain set() reaches the caller.
# SPSIM_WITH_CUDA=AUTO: build the backend when the CUDA toolkit, cuBLAS and NCCL are all found, else say
# why and leave spsim_have_cuda OFF. SPSIM_WITH_CUDA=ON: the same, but a missing piece is fatal.

set(spsim_cuda_root "/usr/local/cuda" CACHE PATH "Where to look first for the CUDA toolkit and NCCL")

# Reports a missing piece: fatal when the user asked for CUDA explicitly, a status line otherwise.
macro(spsim_cuda_missing why)
  if(SPSIM_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPSIM_WITH_CUDA=ON but ${why}")
  endif()
  message(STATUS "spsim: CUDA/NCCL backend disabled: ${why}")
  return()  # leaves the included file; spsim_have_cuda stays OFF
endmacro()

if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS "${spsim_cuda_root}/bin/nvcc")
  set(CMAKE_CUDA_COMPILER "${spsim_cuda_root}/bin/nvcc" CACHE FILEPATH "CUDA compiler")
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  spsim_cuda_missing("no CUDA compiler (nvcc) was found; set CMAKE_CUDA_COMPILER or spsim_cuda_root")
endif()

if(NOT DEFINED CUDAToolkit_ROOT)
  get_filename_component(CUDAToolkit_ROOT "${CMAKE_CUDA_COMPILER}" DIRECTORY)
  get_filename_component(CUDAToolkit_ROOT "${CUDAToolkit_ROOT}" DIRECTORY)  # <root>/bin/nvcc -> <root>
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  spsim_cuda_missing("the CUDA toolkit (find_package(CUDAToolkit)) was not found")
endif()
if(NOT TARGET CUDA::cublas)
  spsim_cuda_missing("cuBLAS was not found in the CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT}")
endif()

find_path(spsim_nccl_include nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} "${spsim_cuda_root}/include" ENV NCCL_HOME PATH_SUFFIXES include)
find_library(spsim_nccl_library nccl
  HINTS ${CUDAToolkit_LIBRARY_DIR} "${spsim_cuda_root}/lib" "${spsim_cuda_root}/lib64" ENV NCCL_HOME
  PATH_SUFFIXES lib lib64)
if(NOT spsim_nccl_include OR NOT spsim_nccl_library)
  spsim_cuda_missing("NCCL was not found (nccl.h: ${spsim_nccl_include}, libnccl: ${spsim_nccl_library})")
endif()

# sm_80 (A100) and sm_90 (H100/H200) machine code, plus compute_90 PTX that newer GPUs JIT-compile.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
endif()
set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flags for nvcc; kernels need only C++17
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # one cudart, the same CUDA::cudart the C++ code links
enable_language(CUDA)

add_library(spsim_nccl_lib UNKNOWN IMPORTED)
set_target_properties(spsim_nccl_lib PROPERTIES IMPORTED_LOCATION "${spsim_nccl_library}"
                                                 INTERFACE_INCLUDE_DIRECTORIES "${spsim_nccl_include}")

file(GLOB spsim_cuda_sources CONFIGURE_DEPENDS
  runtime/cuda/*.cu runtime/cuda/*.cpp runtime/nccl/*.cu runtime/nccl/*.cpp)
# OBJECT: the same objects go into the module the spsim binary loads (spsim_cuda_backend, below) and
# straight into test_gpu and bench_gpu_gemm, which link spsim_runtime for the runtime/ functions they call.
add_library(spsim_cuda OBJECT ${spsim_cuda_sources})
# The directory-wide sanitizer flags are host-compiler flags nvcc does not accept: keep them for C++ only.
get_property(spsim_dir_options DIRECTORY PROPERTY COMPILE_OPTIONS)
set_property(TARGET spsim_cuda PROPERTY COMPILE_OPTIONS "")
foreach(opt IN LISTS spsim_dir_options)
  target_compile_options(spsim_cuda PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${opt}>)
endforeach()
target_compile_options(spsim_cuda PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${SPSIM_WARNINGS}>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
# Part of the runtime layer: it sees runtime/ (and runtime/core/) only (cmake/layers.cmake).
spsim_layer_root(spsim_cuda_runtime_root runtime)
target_include_directories(spsim_cuda PUBLIC ${spsim_cuda_runtime_root})
target_link_libraries(spsim_cuda PUBLIC CUDA::cudart CUDA::cublas spsim_nccl_lib)
if(spsim_have_mpi)
  # MPI broadcasts the NCCL unique id when a communicator spans processes.
  target_link_libraries(spsim_cuda PUBLIC MPI::MPI_C)
  target_compile_definitions(spsim_cuda PRIVATE SPSIM_WITH_MPI=1)
endif()
# The module the spsim binary loads on demand (runtime/cuda_backend.hpp): the same objects, built
# position-independent, with the CUDA libraries linked here and runtime/ symbols taken from the binary.
set_target_properties(spsim_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(spsim_cuda_backend MODULE)
target_link_libraries(spsim_cuda_backend PRIVATE spsim_cuda)
set_target_properties(spsim_cuda_backend PROPERTIES OUTPUT_NAME spsim_cuda PREFIX lib
                                                    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
set(spsim_have_cuda ON)
message(STATUS "spsim: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_ARCHITECTURES}), NCCL ${spsim_nccl_library}")
