# Sanitizer build (ATTNSERVE_SANITIZE=ON, the `asan` preset): compiles
# default_options.cc into every executable target so each one starts with
# halt_on_error / print_stacktrace / the LSan suppressions file, however it is
# run (ctest, by hand, or as the server under the Python integration tests).
set(ATTNSERVE_SANITIZER_OPTIONS_SRC ${CMAKE_CURRENT_LIST_DIR}/default_options.cc)
set(ATTNSERVE_LSAN_SUPPRESSIONS ${CMAKE_CURRENT_LIST_DIR}/lsan.supp)

# attnserve_add_sanitizer_defaults(DIR): walks DIR and its subdirectories and
# adds the options file to each executable found there.
function(attnserve_add_sanitizer_defaults dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_sources(${t} PRIVATE ${ATTNSERVE_SANITIZER_OPTIONS_SRC})
      set_source_files_properties(${ATTNSERVE_SANITIZER_OPTIONS_SRC} TARGET_DIRECTORY ${t}
        PROPERTIES COMPILE_DEFINITIONS "ATTNSERVE_LSAN_SUPPRESSIONS=\"${ATTNSERVE_LSAN_SUPPRESSIONS}\"")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    attnserve_add_sanitizer_defaults(${sub})
  endforeach()
endfunction()
