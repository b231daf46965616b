# libcsv ships no pkg-config or CMake package file: find it by header and library.
find_path(LIBCSV_INCLUDE_DIR NAMES csv.h)
find_library(LIBCSV_LIBRARY NAMES csv)
if(LIBCSV_INCLUDE_DIR AND EXISTS "${LIBCSV_INCLUDE_DIR}/csv.h")
  file(STRINGS "${LIBCSV_INCLUDE_DIR}/csv.h" _v REGEX "^#define CSV_(MAJOR|MINOR|RELEASE) +[0-9]+")
  string(REGEX REPLACE ".*CSV_MAJOR +([0-9]+).*"   "\\1" _maj "${_v}")
  string(REGEX REPLACE ".*CSV_MINOR +([0-9]+).*"   "\\1" _min "${_v}")
  string(REGEX REPLACE ".*CSV_RELEASE +([0-9]+).*" "\\1" _rel "${_v}")
  set(LIBCSV_VERSION "${_maj}.${_min}.${_rel}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibCSV REQUIRED_VARS LIBCSV_LIBRARY LIBCSV_INCLUDE_DIR
                                  VERSION_VAR LIBCSV_VERSION)
if(LibCSV_FOUND AND NOT TARGET LibCSV::LibCSV)
  add_library(LibCSV::LibCSV UNKNOWN IMPORTED)
  set_target_properties(LibCSV::LibCSV PROPERTIES IMPORTED_LOCATION "${LIBCSV_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LIBCSV_INCLUDE_DIR}")
endif()
mark_as_advanced(LIBCSV_INCLUDE_DIR LIBCSV_LIBRARY)
