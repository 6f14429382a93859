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
