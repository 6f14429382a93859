# SPDX-License-Identifier: MIT
# FindXml2.cmake -- libxml2, which writes the JUnit and HTML reports;
# provides TP::xml2, static or shared by TP_STATIC_DEPS (cmake/TPDeps.cmake).
#
# Debian builds libxml2 with ICU, whose converters would bring ICU's 30 MB
# of data into every program.  The reports are written in UTF-8 only, which
# libxml2 converts itself, so the static link replaces ICU's five converter
# functions with tools/report/xml_noicu.c (tpnoicu): an encoding that glibc's iconv
# does not convert is then refused by libxml2 as unsupported.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_XML2 QUIET libxml-2.0)
endif()
find_path(XML2_INCLUDE_DIR libxml/xmlwriter.h HINTS ${PC_XML2_INCLUDE_DIRS} PATH_SUFFIXES libxml2)
tp_find_dep(XML2_LIBRARY xml2 HINTS ${PC_XML2_LIBRARY_DIRS})
set(_xml2_vars XML2_LIBRARY XML2_INCLUDE_DIR)
if(TP_STATIC_DEPS)
  tp_find_dep(XML2_Z_LIBRARY z)
  tp_find_dep(XML2_LZMA_LIBRARY lzma)
  find_path(XML2_ICU_INCLUDE_DIR unicode/ucnv.h)
  list(APPEND _xml2_vars XML2_Z_LIBRARY XML2_LZMA_LIBRARY XML2_ICU_INCLUDE_DIR)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Xml2 REQUIRED_VARS ${_xml2_vars})
if(Xml2_FOUND AND NOT TARGET TP::xml2)
  add_library(TP::xml2 UNKNOWN IMPORTED)
  set_target_properties(TP::xml2 PROPERTIES IMPORTED_LOCATION "${XML2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XML2_INCLUDE_DIR}")
  if(TP_STATIC_DEPS)
    set_target_properties(TP::xml2 PROPERTIES INTERFACE_LINK_LIBRARIES
      "tpnoicu;${XML2_Z_LIBRARY};${XML2_LZMA_LIBRARY};${CMAKE_DL_LIBS};m")
  endif()
endif()
