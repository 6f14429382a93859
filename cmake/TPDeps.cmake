# SPDX-License-Identifier: MIT
# TPDeps.cmake -- where a C dependency's library comes from.
#
# TP_STATIC_DEPS (ON by default) links the static archives Debian ships
# (libnng.a, libmsgpackc.a, libsqlite3.a, libjansson.a, libxml2.a with
# libz.a and liblzma.a) into the programs and the agent, so that they need
# nothing from the system but glibc: the wheel (docs/install.md) carries
# three files and no libraries.  The agent links them with
# -Wl,--exclude-libs,ALL and exports only agent/agent.map, so that its
# copies never interpose on a build of the same library the training
# process loads itself.  OFF links the shared libraries instead.
option(TP_STATIC_DEPS "Link nng, msgpack-c, SQLite, Jansson and libxml2 statically" ON)

# tp_find_dep(VAR name [HINTS dirs]) finds lib<name>: its static archive
# into VAR_STATIC when TP_STATIC_DEPS, else the shared library into VAR;
# VAR is set to the one used.  The two cache entries differ so that turning
# the option over in a configured build folder finds anew.
function(tp_find_dep var name)
  cmake_parse_arguments(D "" "" "HINTS" ${ARGN})
  if(TP_STATIC_DEPS)
    find_library(${var}_STATIC NAMES lib${name}.a HINTS ${D_HINTS})
    set(${var} "${${var}_STATIC}" PARENT_SCOPE)
  else()
    find_library(${var}_SHARED NAMES ${name} HINTS ${D_HINTS})
    set(${var} "${${var}_SHARED}" PARENT_SCOPE)
  endif()
endfunction()

# tp_require_deps() stops the configuration (and so `pip install .`) when
# a dependency was not found, with one message that names every missing
# Debian package and the commands that install them; it never runs them.
function(tp_require_deps)
  set(debs "")
  set(what "")
  macro(_missing found deb why)
    if(NOT ${found})
      list(APPEND debs ${deb})
      string(APPEND what "\n  ${deb}  (${why})")
    endif()
  endmacro()
  if(NOT TP_STATIC_DEPS)
    _missing(Nng_FOUND libnng-dev "nng: the agent's and the tools' sockets")
  endif()
  _missing(MsgpackC_FOUND libmsgpack-dev "msgpack-c: the events on the wire")
  _missing(Xxhash_FOUND libxxhash-dev "xxHash: the digests")
  _missing(Jansson_FOUND libjansson-dev "Jansson: the JSON reports")
  _missing(SQLite3_FOUND libsqlite3-dev "SQLite: the daemon's store")
  _missing(XML2_LIBRARY libxml2-dev "libxml2: the JUnit and HTML reports")
  if(TP_STATIC_DEPS)
    _missing(XML2_Z_LIBRARY zlib1g-dev "zlib, for the static libxml2")
    _missing(XML2_LZMA_LIBRARY liblzma-dev "liblzma, for the static libxml2")
    _missing(XML2_ICU_INCLUDE_DIR libicu-dev "ICU's headers, for tools/report/xml_noicu.c")
    find_program(TP_DPKG_SOURCE dpkg-source)
    if(NOT Nng_FOUND)
      _missing(TP_DPKG_SOURCE dpkg-dev "dpkg-source, which unpacks nng's Debian source")
    endif()
  endif()
  if(debs STREQUAL "" AND (Nng_FOUND OR NOT TP_STATIC_DEPS))
    return()
  endif()
  set(msg "TrainParity cannot be built here: missing")
  if(NOT debs STREQUAL "")
    list(JOIN debs " " line)
    string(APPEND msg " these Debian packages:${what}\nInstall them (as root):\n"
      "  apt-get install -y --no-install-recommends ${line}\n")
  endif()
  if(TP_STATIC_DEPS AND NOT Nng_FOUND)
    string(APPEND msg "nng's Debian source is not in ${TP_NNG_SOURCE}; put it there (no root "
      "needed) with:\n  tools/scripts/deps.sh\n")
  endif()
  message(FATAL_ERROR "${msg}")
endfunction()
