# podsim_module(NAME SOURCES ... DEPS ... [PRIVATE_DEPS ...])
#
# Defines the static library podsim_<NAME> with alias podsim::<NAME>. DEPS are other podsim modules
# (given by bare name) this module may include; PRIVATE_DEPS are external targets. At configure time
# every `#include "<module>/..."` in the module's sources is checked against DEPS (transitively), so
# a lower module can never include a higher one: the dependency order is enforced, not just advised.

include(GNUInstallDirs)

# -Wno-restrict: GCC 12 false positive on std::string concatenation at -O2 (GCC bug 105329); clang
# (the sanitizer and fuzz build) has no such option.
set(PODSIM_WARNINGS -Wall -Wextra -Wpedantic -Werror -Wshadow -Wnon-virtual-dtor -Wconversion
    -Wno-sign-conversion $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)

function(podsim_target_options target)
  target_compile_options(${target} PRIVATE ${PODSIM_WARNINGS})
  if(PODSIM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(PODSIM_FUZZ)
    # Coverage feedback for libFuzzer in every module; executables without libFuzzer still link
    # (the sanitizer runtime provides the coverage callbacks).
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

# Installs the module's library and its headers, except those internal to it (the ones that
# include yaml-cpp): an embedding program needs no yaml-cpp headers.
function(podsim_install_module name)
  set(public_headers)
  foreach(header IN LISTS ARGN)
    file(STRINGS ${header} internal REGEX "^#include <yaml-cpp/")
    if(NOT internal)
      list(APPEND public_headers ${header})
    endif()
  endforeach()
  install(TARGETS podsim_${name} EXPORT podsimTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/podsim/${name})
endfunction()

function(podsim_module name)
  cmake_parse_arguments(PM "" "" "SOURCES;DEPS;PRIVATE_DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(podsim_${name} STATIC ${PM_SOURCES})
  add_library(podsim::${name} ALIAS podsim_${name})
  # Installed, headers keep their module folder under include/podsim (cmake/PodsimInstall.cmake).
  target_include_directories(podsim_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/sim>
                                                   $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/podsim>)
  set_target_properties(podsim_${name} PROPERTIES EXPORT_NAME ${name})
  foreach(dep IN LISTS PM_DEPS)
    if(NOT TARGET podsim_${dep})
      message(FATAL_ERROR "module ${name} depends on ${dep}, which is not defined yet: "
                          "modules must be added in dependency order")
    endif()
    target_link_libraries(podsim_${name} PUBLIC podsim::${dep})
  endforeach()
  target_link_libraries(podsim_${name} PUBLIC ${PM_PUBLIC_DEPS} PRIVATE ${PM_PRIVATE_DEPS})
  podsim_target_options(podsim_${name})

  # Transitive closure of allowed modules.
  set(allowed ${name})
  foreach(dep IN LISTS PM_DEPS)
    get_property(dep_allowed GLOBAL PROPERTY PODSIM_ALLOWED_${dep})
    list(APPEND allowed ${dep} ${dep_allowed})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY PODSIM_ALLOWED_${name} ${allowed})
  get_property(all_modules GLOBAL PROPERTY PODSIM_MODULES)
  list(APPEND all_modules ${name})
  set_property(GLOBAL PROPERTY PODSIM_MODULES ${all_modules})

  file(GLOB headers ${CMAKE_CURRENT_SOURCE_DIR}/*.hpp)
  podsim_install_module(${name} ${headers})
  foreach(src IN LISTS PM_SOURCES headers)
    get_filename_component(path ${src} ABSOLUTE)
    file(STRINGS ${path} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" used ${line})
      list(FIND allowed ${used} found)
      if(found EQUAL -1)
        message(FATAL_ERROR "${path}: module '${name}' includes '${used}/', which is not among its "
                            "dependencies (${allowed}). Lower modules never include higher ones.")
      endif()
    endforeach()
  endforeach()
endfunction()
