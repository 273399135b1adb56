# Compressed debug information. The RelWithDebInfo build links the analyzer, with its debug
# information, into each of some forty test executables: uncompressed they came to about 100 MB
# apiece and a clean build directory to over 3 GB, more than a CI machine's disk has held (one CI
# run stopped with "No space left on device"). zlib-compressed sections are read by gdb, addr2line
# and perf alike; a compiler or linker that cannot write them gets the plain ones.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -gz)
check_cxx_source_compiles("int main() { return 0; }" CUOVERLAP_CXX_COMPRESSED_DEBUG)
unset(CMAKE_REQUIRED_FLAGS)
if(CUOVERLAP_CXX_COMPRESSED_DEBUG)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-gz>)
  add_link_options($<$<LINK_LANGUAGE:CXX>:-gz>)
endif()
