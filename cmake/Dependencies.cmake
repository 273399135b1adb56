# Third-party dependencies, all as imported targets. Debian 12 / Ubuntu 24.04 packages:
# libsqlite3-dev catch2 libcli11-dev nlohmann-json3-dev libfmt-dev rapidjson-dev zlib1g-dev libre2-dev
# (scripts/setup.sh installs them).
find_package(SQLite3 REQUIRED)
# CMake 4 names the imported target SQLite3::SQLite3 and deprecates SQLite::SQLite3 (the only name
# CMake 3.25 knows): link the one this CMake provides through cuoverlap::sqlite3.
add_library(cuoverlap_sqlite3 INTERFACE)
if(TARGET SQLite3::SQLite3)
  target_link_libraries(cuoverlap_sqlite3 INTERFACE SQLite3::SQLite3)
else()
  target_link_libraries(cuoverlap_sqlite3 INTERFACE SQLite::SQLite3)
endif()
add_library(cuoverlap::sqlite3 ALIAS cuoverlap_sqlite3)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(Threads REQUIRED)
# The Kineto JSON importer: zlib for .json.gz, RapidJSON's SAX reader (header-only; Debian's
# rapidjson-dev has no imported target, so find its headers, also under CMAKE_PREFIX_PATH).
find_package(ZLIB REQUIRED)
find_path(CUOVERLAP_RAPIDJSON_INCLUDE_DIR rapidjson/reader.h REQUIRED)
add_library(cuoverlap_rapidjson INTERFACE)
target_include_directories(cuoverlap_rapidjson SYSTEM INTERFACE ${CUOVERLAP_RAPIDJSON_INCLUDE_DIR})
add_library(cuoverlap::rapidjson ALIAS cuoverlap_rapidjson)
# RE2 for --range /REGEX/ and globs (matching in linear time). Its own CMake package where it
# ships one (RE2 >= 2022 built with CMake), else Debian's pkg-config file (libre2-dev).
find_package(re2 CONFIG QUIET)
add_library(cuoverlap_re2 INTERFACE)
if(TARGET re2::re2)
  target_link_libraries(cuoverlap_re2 INTERFACE re2::re2)
else()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(RE2 QUIET IMPORTED_TARGET re2)
  endif()
  if(TARGET PkgConfig::RE2)
    target_link_libraries(cuoverlap_re2 INTERFACE PkgConfig::RE2)
  else()
    # A host without pkg-config (the GPU hosts, whose packages are unpacked under
    # CMAKE_PREFIX_PATH): the header and the library by name.
    find_path(CUOVERLAP_RE2_INCLUDE_DIR re2/re2.h REQUIRED)
    find_library(CUOVERLAP_RE2_LIBRARY re2 REQUIRED)
    target_include_directories(cuoverlap_re2 SYSTEM INTERFACE ${CUOVERLAP_RE2_INCLUDE_DIR})
    target_link_libraries(cuoverlap_re2 INTERFACE ${CUOVERLAP_RE2_LIBRARY})
  endif()
endif()
add_library(cuoverlap::re2 ALIAS cuoverlap_re2)
# include(CTest) runs after this file, so BUILD_TESTING is still undefined on a first configure.
if(CUOVERLAP_BUILD_TESTS AND (BUILD_TESTING OR NOT DEFINED BUILD_TESTING))
  find_package(Catch2 2 CONFIG REQUIRED)
endif()

# CUDA is optional: without it the analyzer, reports and CPU tests still build.
set(CUOVERLAP_HAVE_CUDA OFF)
if(CUOVERLAP_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cupti)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CUOVERLAP_HAVE_CUDA ON)
    message(STATUS "cuoverlap: CUDA ${CUDAToolkit_VERSION} found: building collector and workloads")
  else()
    message(STATUS "cuoverlap: no CUDA toolkit with CUPTI: building analyzer, reports and CPU tests only")
  endif()
endif()
