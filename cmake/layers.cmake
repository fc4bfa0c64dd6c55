# Layer libraries whose headers only the layers above can include (DESIGN.md §3).
#
# spsim_layer_root(VAR folder): an include root build/layers/<folder, / as ->/ holding one symbolic link,
# <folder> -> the source folder, so `#include "<folder>/x.hpp"` resolves through it and through nothing
# else. A target that links a layer library sees that layer's root (PUBLIC include directory) and,
# transitively, the roots of the layers below it; a header of a layer it does not link is not found.
function(spsim_layer_root var folder)
  string(REPLACE "/" "-" root_name "${folder}")
  set(root "${CMAKE_BINARY_DIR}/layers/${root_name}")
  get_filename_component(parent "${root}/${folder}" DIRECTORY)
  file(MAKE_DIRECTORY "${parent}")
  if(NOT IS_SYMLINK "${root}/${folder}")
    file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}/${folder}" "${root}/${folder}" SYMBOLIC)
  endif()
  set(${var} "${root}" PARENT_SCOPE)
endfunction()

# spsim_layer(NAME folder SOURCES glob... [LINKS target...]): a static library of the folder's sources,
# compiled with the project's warnings, seeing its own include root and those of what it links.
function(spsim_layer name folder)
  cmake_parse_arguments(L "" "" "SOURCES;LINKS" ${ARGN})
  spsim_layer_root(root "${folder}")
  set(globs)
  foreach(g IN LISTS L_SOURCES)
    list(APPEND globs "${CMAKE_CURRENT_SOURCE_DIR}/${g}")
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${globs})
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC "${root}")
  target_link_libraries(${name} PUBLIC ${L_LINKS})
  target_compile_options(${name} PRIVATE ${SPSIM_WARNINGS})
endfunction()
