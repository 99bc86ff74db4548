# A precompiled <torch/torch.h> for every target that compiles against LibTorch (build speed).
#
# Parsing LibTorch's headers is most of the compile time of a runtime, tuner, CLI or test object;
# with PIPEPROF_TORCH_PCH (default ON) the header is parsed once per build into a precompiled
# header that those targets reuse (docs/notes/build-history.md). GCC uses a
# precompiled header only with the -fPIC/-fPIE setting it was built with, so there are two: one
# for the position-independent libraries, one for the rest (executables), each built only when
# a target needs it. Every object of such a target includes <torch/torch.h> first; an object
# that forgets an include it needs may compile only with the option ON: a build with
# -DPIPEPROF_TORCH_PCH=OFF checks that.
#
# With ccache, objects that use a precompiled header hit the cache only under the sloppiness
# pch_defines,time_macros (ccache's manual, "Precompiled headers"): the top CMakeLists.txt passes
# it to ccache when the option is ON.

option(PIPEPROF_TORCH_PCH "Precompile <torch/torch.h> once for the LibTorch targets" ON)

# _pipeprof_sees_torch(<target> <out-var>): whether <target> compiles against LibTorch's
# headers: it links torch, or a target whose usage requirements carry torch, directly or
# through others. Link-only dependencies ($<LINK_ONLY:...>) carry no headers and are skipped.
function(_pipeprof_sees_torch target out_var)
  get_property(known GLOBAL PROPERTY _PIPEPROF_SEES_TORCH_${target} SET)
  if(known)
    get_property(result GLOBAL PROPERTY _PIPEPROF_SEES_TORCH_${target})
    set(${out_var} ${result} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY _PIPEPROF_SEES_TORCH_${target} FALSE)  # ends cycles
  set(result FALSE)
  if(target STREQUAL "torch")
    set(result TRUE)
  else()
    get_target_property(type ${target} TYPE)
    set(links "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(imported ${target} IMPORTED)
      if(NOT imported)
        get_target_property(links ${target} LINK_LIBRARIES)
      endif()
    endif()
    get_target_property(interface_links ${target} INTERFACE_LINK_LIBRARIES)
    foreach(item IN LISTS links interface_links)
      if(NOT item OR item MATCHES "\\$<" OR NOT TARGET "${item}")
        continue()
      endif()
      get_target_property(aliased "${item}" ALIASED_TARGET)
      if(aliased)
        set(item ${aliased})
      endif()
      _pipeprof_sees_torch(${item} sees)
      if(sees)
        set(result TRUE)
        break()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY _PIPEPROF_SEES_TORCH_${target} ${result})
  set(${out_var} ${result} PARENT_SCOPE)
endfunction()

# _pipeprof_directory_targets(<dir> <out-var>): the targets defined in <dir> and below.
function(_pipeprof_directory_targets dir out_var)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _pipeprof_directory_targets("${subdir}" sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out_var} ${targets} PARENT_SCOPE)
endfunction()

# pipeprof_use_torch_pch(): gives every LibTorch target of the project the precompiled header.
# Call it once, after every target is defined.
function(pipeprof_use_torch_pch)
  if(NOT PIPEPROF_TORCH_PCH OR NOT TARGET torch)
    return()
  endif()
  _pipeprof_directory_targets("${PROJECT_SOURCE_DIR}" targets)
  set(count 0)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(pch ${target} PRECOMPILE_HEADERS)
    get_target_property(reuse ${target} PRECOMPILE_HEADERS_REUSE_FROM)
    if(pch OR reuse)
      continue()  # a target with a header of its own keeps it
    endif()
    _pipeprof_sees_torch(${target} sees)
    if(NOT sees)
      continue()
    endif()
    get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
    if(pic OR type MATCHES "^(SHARED|MODULE)_LIBRARY$")
      set(pic ON)
    else()
      set(pic OFF)
    endif()
    if(pic)
      set(pch_target pipeprof_torch_pch_pic)
    else()
      set(pch_target pipeprof_torch_pch)
    endif()
    if(NOT TARGET ${pch_target})
      set(source "${PROJECT_BINARY_DIR}/${pch_target}.cpp")
      file(CONFIGURE OUTPUT "${source}" CONTENT "// The precompiled <torch/torch.h> (cmake/PipeprofTorchPch.cmake).\n")
      add_library(${pch_target} OBJECT "${source}")
      target_link_libraries(${pch_target} PRIVATE torch)
      target_precompile_headers(${pch_target} PRIVATE <torch/torch.h>)
      set_target_properties(${pch_target} PROPERTIES POSITION_INDEPENDENT_CODE ${pic})
    endif()
    target_precompile_headers(${target} REUSE_FROM ${pch_target})
    math(EXPR count "${count} + 1")
  endforeach()
  message(STATUS "pipeprof: precompiled <torch/torch.h> for ${count} LibTorch targets (PIPEPROF_TORCH_PCH)")
endfunction()
