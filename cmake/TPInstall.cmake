# SPDX-License-Identifier: MIT
# TPInstall.cmake -- what `cmake --install BUILD --prefix P` lays out:
#   P/bin/trainparity-run, P/bin/trainparity-daemon
#   P/lib/libtpagent.so (and libtpagent_cuda.so when built): trainparity-run
#     finds the agent at ../lib/ from its own folder, the daemon beside
#     itself, and the agent its CUDA part beside itself, so P can be moved
#   P/share/trainparity/: the report's JSON schema, the JUnit XSD, the
#     event schema; P/share/doc/trainparity/: README, LICENSE, docs/
# In the wheel (SKBUILD), P is the trainparity_native package folder, and
# the package's Python files and _version.py go to P itself.
install(TARGETS trainparity-run trainparity-daemon RUNTIME DESTINATION bin)
install(TARGETS tpagent LIBRARY DESTINATION lib)
if(TARGET tpagent_cuda)
  install(TARGETS tpagent_cuda LIBRARY DESTINATION lib)
endif()
install(FILES docs/report-schema.json tests/e2e/junit.xsd proto/SCHEMA.md
  DESTINATION share/trainparity)
install(FILES README.md LICENSE DESTINATION share/doc/trainparity)
install(DIRECTORY docs/ DESTINATION share/doc/trainparity/docs)

if(SKBUILD)
  install(DIRECTORY python/trainparity_native/ DESTINATION .
    PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  file(WRITE ${PROJECT_BINARY_DIR}/gen/_version.py
    "# generated from CMakeLists.txt's project() at install; do not edit\nVERSION = \"${PROJECT_VERSION}\"\n")
  install(FILES ${PROJECT_BINARY_DIR}/gen/_version.py DESTINATION .)
endif()
