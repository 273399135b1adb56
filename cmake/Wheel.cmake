# Settings of the wheel build only (pyproject.toml; scikit-build-core defines SKBUILD).
# ccache, when installed, makes `pip install .` reuse what scripts/setup.sh's build compiled: the
# wheel is built RelWithDebInfo like it, with the same flags, then stripped at install.
find_program(CUOVERLAP_CCACHE ccache)
if(CUOVERLAP_CCACHE)
  foreach(lang CXX CUDA)
    if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${CUOVERLAP_CCACHE})
    endif()
  endforeach()
endif()
