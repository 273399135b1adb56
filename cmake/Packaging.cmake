# Install layout and the Debian package (cpack). `cmake --install build --prefix P` gives:
#   P/bin/cuoverlap                         the command
#   P/lib/libcuoverlap_collector.so         the collector (when built with CUDA; `record` looks in ../lib)
#   P/share/man/man1/cuoverlap*.1           a man page per command, made from the binary's --help
#   P/share/bash-completion/completions/cuoverlap, P/share/zsh/vendor-completions/_cuoverlap
#   P/share/doc/cuoverlap/                  README.md and docs/*.md
# The `runtime` install component is the command and the collector alone: what the Python wheel
# holds (pyproject.toml builds the cuoverlap_runtime target and installs only this component).
# `cpack -G DEB --config build/CPackConfig.cmake` (from the build tree) writes cuoverlap_VERSION_ARCH.deb.
include(GNUInstallDirs)
add_custom_target(cuoverlap_runtime DEPENDS cuoverlap)
if(TARGET cuoverlap_collector)
  add_dependencies(cuoverlap_runtime cuoverlap_collector)
endif()
set(cuoverlap_man_dir ${CMAKE_CURRENT_BINARY_DIR}/man)
add_custom_command(
  OUTPUT ${cuoverlap_man_dir}/cuoverlap.1
  COMMAND bash ${PROJECT_SOURCE_DIR}/packaging/make_man.sh $<TARGET_FILE:cuoverlap> ${cuoverlap_man_dir}
          ${PROJECT_VERSION}
  DEPENDS cuoverlap ${PROJECT_SOURCE_DIR}/packaging/make_man.sh
  COMMENT "Man pages from cuoverlap --help")
add_custom_target(cuoverlap_man ALL DEPENDS ${cuoverlap_man_dir}/cuoverlap.1)
install(DIRECTORY ${cuoverlap_man_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
install(FILES ${PROJECT_SOURCE_DIR}/packaging/cuoverlap.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME cuoverlap)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/_cuoverlap DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
file(GLOB cuoverlap_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${cuoverlap_docs} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_PACKAGE_NAME cuoverlap)
set(CPACK_PACKAGE_VENDOR "cuoverlap")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Shows whether CUDA copies, kernels and collectives overlap, and why not")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "cuoverlap developers <cuoverlap@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The collector needs the CUDA driver and CUPTI at run time; the analyzer needs neither.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libsqlite3-0, libfmt9 | libfmt10 | libfmt-dev, libre2-9 | libre2-10 | libre2-11, libstdc++6")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "cuda-cupti-13-0")
# The build is RelWithDebInfo (scripts/setup.sh): the .deb ships the binary and the collector
# stripped of their symbols and debug information (about a tenth of the size).
set(CPACK_STRIP_FILES TRUE)
set(CPACK_GENERATOR DEB)
include(CPack)
